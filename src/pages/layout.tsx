import type { Context } from "hono";
import type { Child, FC } from "hono/jsx";
import type { HtmlEscapedString } from "hono/utils/html";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "../env";
import type { SignedInAccount } from "../middleware/account-session";
import { ANTI_FORGERY_FIELD } from "../middleware/anti-forgery";

/**
 * The frame of every page for people (docs/API.md §16): server-rendered HTML that needs no script, one `h1` per
 * page (the page's own; the service's name in the header is a link), the stylesheet from the static assets.
 * Other page wings (the Nextcloud Login Flow's grant page) use it too.
 */

export const SERVICE_NAME = "Podcast Sync";

/** The hidden field that carries the session's anti-forgery token in every form that changes the account. */
export const AntiForgeryField: FC<{ account: SignedInAccount }> = ({ account }) => (
  <input type="hidden" name={ANTI_FORGERY_FIELD} value={account.antiForgeryToken} />
);

/** Text only screen readers read (a button's full name, where the row already shows it). */
export const ScreenReaderOnly: FC<{ children?: Child }> = ({ children }) => <span class="sr-only">{children}</span>;

/**
 * A name a client or a person chose (an app name, a device's caption or id, an app password's label, who signed
 * in): isolated from the text around it (docs/API.md §16), so that right-to-left letters or a trailing number in it
 * cannot reorder the sentence it sits in.
 */
export const ChosenName: FC<{ name: string }> = ({ name }) => <bdi>{name}</bdi>;

const ACCOUNT_LINKS = [
  { href: "/account", label: "Account" },
  { href: "/account/subscriptions", label: "Subscriptions" },
  { href: "/account/progress", label: "Listening progress" },
  { href: "/account/erase", label: "Erase account" },
];

const AccountNavigation: FC<{ account: SignedInAccount; current?: string }> = ({ account, current }) => (
  <nav aria-label="Account">
    <ul>
      {ACCOUNT_LINKS.map((link) => (
        <li>
          <a href={link.href} aria-current={link.href === current ? "page" : undefined}>
            {link.label}
          </a>
        </li>
      ))}
    </ul>
    <form method="post" action="/account/signout" class="sign-out">
      <AntiForgeryField account={account} />
      <span class="who">
        <ChosenName name={account.name} />
      </span>
      <button type="submit">Sign out</button>
    </form>
  </nav>
);

export interface LayoutProps {
  /** The page's title (the `h1` says it too). */
  title: string;
  /** The signed-in person: the account navigation and `Sign out` are shown. */
  account?: SignedInAccount;
  /** The navigation entry of this page. */
  current?: string;
  children?: Child;
}

export const Layout: FC<LayoutProps> = ({ title, account, current, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="robots" content="noindex" />
      <title>{`${title} · ${SERVICE_NAME}`}</title>
      <link rel="stylesheet" href="/assets/pages.css" />
    </head>
    <body>
      <header class="site">
        <a class="brand" href="/">
          {SERVICE_NAME}
        </a>
        {account ? <AccountNavigation account={account} current={current} /> : null}
      </header>
      <main>{children}</main>
      <footer class="site">
        <p>
          App developers: the <a href="/docs">API reference</a>. Your data stays yours: export it as OPML or erase it at
          any time.
        </p>
      </footer>
    </body>
  </html>
);

/** Answers a page: the document with its doctype, as HTML, with the status given. */
export async function renderPage(
  c: Context<AppEnv>,
  page: HtmlEscapedString | Promise<HtmlEscapedString>,
  status: ContentfulStatusCode = 200,
  headers: Record<string, string> = {},
): Promise<Response> {
  return c.html(`<!DOCTYPE html>${await page}`, status, headers);
}
