import { Hono, type MiddlewareHandler } from "hono";
import { verifiedCredentials } from "../auth/verified-credentials";
import { eraseAccount } from "../db/account";
import { accountOverview, type ListKey, type PageCursor, recentEpisodes, subscriptionsPage } from "../db/account-pages";
import { endAccountSession } from "../db/account-sessions";
import { unsubscribe } from "../db/subscriptions";
import type { AppEnv } from "../env";
import { forgetKnownDevices } from "../gpodder/devices";
import { ApiError, absoluteUrl } from "../jsonapi";
import {
  accountSession,
  assertWritable,
  clearSessionCookie,
  requireSignIn,
  signedIn,
} from "../middleware/account-session";
import { antiForgery } from "../middleware/anti-forgery";
import { chargeRenumbering, chargeRows, limitPerUser } from "../middleware/rate-limit";
import { opmlExport } from "../opml/export";
import { importOpml } from "../opml/import";
import { OPML_CONTENT_TYPE } from "../opml/media-types";
import { appPasswordLimitReached, isValidLabel, mintAppPassword, revokeAppPassword } from "../resources/app-password";
import { guidSchema } from "../resources/resource-object";
import { AccountPage, ConnectPage, HomePage, SignedOutPage } from "./account-views";
import { ErasedView, EraseView, ImportResultView, type PageLinks, ProgressView, SubscriptionsView } from "./data-views";
import { renderPage } from "./layout";
import { finishSignIn, signInConfigured, startSignIn } from "./sign-in";

/**
 * The pages for people (docs/API.md §16): server-rendered HTML, forms and links only. They call the same db and
 * resource functions as the API, never SQL of their own and never the API over HTTP. Every page of /account first
 * checks that sign-in is configured; a signed-in page costs the session's round trip and one batch of its data.
 */

/** Subscriptions per page. */
export const SUBSCRIPTIONS_PER_PAGE = 25;
/** Episode states on the listening progress page. */
export const RECENT_EPISODES = 50;
/** What `Confirm` must say, exactly, for the account to be erased. */
const ERASE_WORD = "erase";

function badRequest(title: string, detail: string): ApiError {
  return new ApiError({ status: 400, title, detail });
}

const KEY = /^(\d{1,16})\.(\d{1,16})$/;

function parseKey(text: string): ListKey {
  const match = KEY.exec(text);
  const key = match && { subscribedAt: Number(match[1]), subscribedSeq: Number(match[2]) };
  if (!key || !Number.isSafeInteger(key.subscribedAt) || !Number.isSafeInteger(key.subscribedSeq)) {
    throw badRequest("Invalid page link", "This link to a page of your subscriptions is not one this service made.");
  }
  return key;
}

/** `after=<at>.<seq>` or `before=<at>.<seq>` (not both), or the first page. */
function cursorOf(query: URLSearchParams): PageCursor {
  const after = query.get("after");
  const before = query.get("before");
  if (after !== null && before !== null) throw badRequest("Invalid page link", "A page is after a key or before one.");
  if (after !== null) return { after: parseKey(after) };
  if (before !== null) return { before: parseKey(before) };
  return "first";
}

/**
 * The subscriptions page a form returns to (`return_to`: the page it was on, as this service linked it): only its
 * query counts, and it must be a page link this service made; anything else is a 400.
 */
function subscriptionsPageOf(returnTo: string): string {
  let search: URLSearchParams;
  try {
    search = new URL(returnTo, "https://service.invalid").searchParams;
  } catch {
    throw badRequest("Invalid page link", "The page to return to is not one this service made; nothing was changed.");
  }
  cursorOf(search);
  return `/account/subscriptions${search.size > 0 ? `?${search}` : ""}`;
}

const keyText = (key: ListKey) => `${key.subscribedAt}.${key.subscribedSeq}`;

/** The text field `name` of the posted form, or a 400. */
function formText(form: FormData, name: string, what: string): string {
  const value = form.get(name);
  if (typeof value !== "string") throw badRequest("Incomplete form", `The form lacks ${what}; nothing was changed.`);
  return value;
}

/** The per-user rate limit of the API (docs/API.md §12), on the pages of a signed-in person. */
const limitIfSignedIn: MiddlewareHandler<AppEnv> = (c, next) => (c.get("account") ? limitPerUser(c, next) : next());

export const pageRoutes = new Hono<AppEnv>()

  .get("/", (c) => renderPage(c, <HomePage />))

  .use("/account", signInConfigured, accountSession, limitIfSignedIn)
  .use("/account/*", signInConfigured)

  .get("/account", async (c) => {
    const account = c.get("account");
    if (!account) return renderPage(c, <SignedOutPage signedOut={c.req.query("signed_out") !== undefined} />);
    return renderPage(
      c,
      <AccountPage account={account} overview={await accountOverview(account.db, account.userId, Date.now())} />,
    );
  })

  .get("/account/signin", startSignIn)
  .get("/account/callback", finishSignIn)

  .post("/account/signout", accountSession, requireSignIn, antiForgery, async (c) => {
    const account = signedIn(c);
    // A row deleted in a bucket being moved could survive in its copy: the session would outlive the sign-out.
    assertWritable(account);
    await endAccountSession(account.db, account.sessionHash);
    clearSessionCookie(c);
    return c.redirect("/account?signed_out", 303);
  })

  .post("/account/app-passwords", accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const account = signedIn(c);
    assertWritable(account);
    const label = formText(c.get("form"), "label", "an app name").trim();
    if (!isValidLabel(label)) throw badRequest("Invalid app name", "An app name is 1 to 100 characters.");
    const result = await mintAppPassword(account.db, account.userId, label);
    if (result.kind === "limit") throw appPasswordLimitReached();
    const { username } = result.appPassword;
    const server = absoluteUrl(c, "");
    return renderPage(
      c,
      <ConnectPage account={account} label={label} server={server} username={username} password={result.password} />,
    );
  })

  .post("/account/app-passwords/revoke", accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const account = signedIn(c);
    assertWritable(account);
    // One already gone (revoked in another tab) needs nothing more: the list shows what is left.
    await revokeAppPassword(account.db, account.userId, formText(c.get("form"), "id", "the app password"));
    return c.redirect("/account#app-passwords", 303);
  })

  .get("/account/subscriptions", accountSession, requireSignIn, limitPerUser, async (c) => {
    const account = signedIn(c);
    const query = new URL(c.req.url).searchParams;
    const page = await subscriptionsPage(account.db, account.userId, cursorOf(query), SUBSCRIPTIONS_PER_PAGE);
    const [first, last] = [page.rows[0], page.rows[page.rows.length - 1]];
    const links: PageLinks = {
      here: `/account/subscriptions${query.size > 0 ? `?${query}` : ""}`,
      ...(page.hasPrevious && first ? { previous: `/account/subscriptions?before=${keyText(first)}` } : {}),
      ...(page.hasNext && last ? { next: `/account/subscriptions?after=${keyText(last)}` } : {}),
    };
    return renderPage(c, <SubscriptionsView account={account} page={page} links={links} />);
  })

  .post("/account/subscriptions/unsubscribe", accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const account = signedIn(c);
    assertWritable(account);
    const form = c.get("form");
    const guid = formText(form, "guid", "the subscription");
    if (!guidSchema.safeParse(guid).success) throw badRequest("Invalid subscription", "That is no subscription's id.");
    // Everything the form sent is checked before the write (docs/API.md §16): a 400 page means nothing changed.
    const back = subscriptionsPageOf(formText(form, "return_to", "the page to return to"));
    // Already unsubscribed (another tab, another app) needs nothing more: the list shows what is left.
    await unsubscribe(account.db, account.userId, guid, Date.now());
    return c.redirect(back, 303);
  })

  .get("/account/subscriptions.opml", accountSession, requireSignIn, limitPerUser, async (c) => {
    const account = signedIn(c);
    const stream = await opmlExport(account.db, account.userId, c.get("requestId"));
    return c.body(stream, 200, {
      "Content-Type": OPML_CONTENT_TYPE,
      "Content-Disposition": 'attachment; filename="subscriptions.opml"',
    });
  })

  .post("/account/opml", accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const account = signedIn(c);
    assertWritable(account);
    const file = c.get("form").get("opml");
    if (!(file instanceof File) || file.size === 0) {
      throw badRequest("No OPML file", "Choose an OPML file to import; nothing was changed.");
    }
    const { summary, batch, feeds } = await importOpml(
      account.db,
      account.userId,
      new Uint8Array(await file.arrayBuffer()),
      Date.now(),
    );
    await chargeRenumbering(c, batch, feeds);
    return renderPage(c, <ImportResultView account={account} summary={summary} />);
  })

  .get("/account/progress", accountSession, requireSignIn, limitPerUser, async (c) => {
    const account = signedIn(c);
    const episodes = await recentEpisodes(account.db, account.userId, RECENT_EPISODES);
    return renderPage(c, <ProgressView account={account} episodes={episodes} limit={RECENT_EPISODES} />);
  })

  .get("/account/erase", accountSession, requireSignIn, limitPerUser, (c) =>
    renderPage(c, <EraseView account={signedIn(c)} />),
  )

  .post("/account/erase", accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const account = signedIn(c);
    const typed = formText(c.get("form"), "confirm", "the confirmation");
    if (typed !== ERASE_WORD) {
      const refused = `Nothing was erased: ${
        typed === "" ? "Confirm was empty" : `Confirm said "${typed.slice(0, 100)}"`
      }, not "${ERASE_WORD}".`;
      return renderPage(c, <EraseView account={account} refused={refused} />, 400);
    }
    assertWritable(account);
    // docs/API.md §15's erasure, which deletes every session of the user too (this one included).
    const rows = await eraseAccount(account.db, account.userId);
    verifiedCredentials.forget((entry) => entry.userId === account.userId);
    forgetKnownDevices(account.userId);
    await chargeRows(c, rows);
    clearSessionCookie(c);
    c.set("account", undefined);
    return renderPage(c, <ErasedView />);
  });
