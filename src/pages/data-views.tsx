import type { FC } from "hono/jsx";
import type { ListedSubscription, RecentEpisode, SubscriptionsPage } from "../db/account-pages";
import type { SignedInAccount } from "../middleware/account-session";
import type { ImportSummary } from "../opml/import";
import { count, dateTime, duration } from "./format";
import { AntiForgeryField, Layout, ScreenReaderOnly } from "./layout";

/** Where a page of the subscription list is: `after=<at>.<seq>` or `before=<at>.<seq>`, or nothing (the first). */
export interface PageLinks {
  previous?: string;
  next?: string;
  /** This page's own query, for the forms on it to come back to. */
  here: string;
}

const OpmlForms: FC<{ account: SignedInAccount }> = ({ account }) => (
  <section aria-labelledby="opml">
    <h2 id="opml">Move your subscriptions between apps (OPML)</h2>
    <p>
      <a href="/account/subscriptions.opml" download="subscriptions.opml">
        Export OPML
      </a>{" "}
      saves all your subscriptions as a file that every podcast app can import. Importing a file adds its podcasts to
      yours; nothing is removed.
    </p>
    <form method="post" action="/account/opml" enctype="multipart/form-data" class="inline">
      <AntiForgeryField account={account} />
      <label for="opml-file">OPML file</label>
      <input id="opml-file" name="opml" type="file" accept=".opml,.xml,text/x-opml,text/xml,application/xml" required />
      <button type="submit">Import</button>
    </form>
  </section>
);

/**
 * A subscription as a person knows it (docs/API.md §18): by its podcast's title and author, the feed URL beside
 * them, smaller; by its URL alone until the feed is fetched. No image: the pages load nothing from another
 * origin (a listener's address would reach the podcast's host). Text is escaped by JSX, whatever the feed held.
 */
const PodcastName: FC<{ row: ListedSubscription }> = ({ row }) => {
  const { title, author, status } = row.podcast;
  return (
    <span class={title === null ? "podcast" : "podcast titled"}>
      {title === null ? null : <span class="title">{title}</span>}
      {author === null ? null : <span class="author">by {author}</span>}
      {status === "gone" ? <span class="gone">No longer available</span> : null}
      <span class="url">{row.feedUrl}</span>
    </span>
  );
};

/** `GET /account/subscriptions`: 25 at a time in list order, each with `Unsubscribe`, and `Previous` / `Next`. */
export const SubscriptionsView: FC<{ account: SignedInAccount; page: SubscriptionsPage; links: PageLinks }> = ({
  account,
  page,
  links,
}) => (
  <Layout title="Subscriptions" account={account} current="/account/subscriptions">
    <h1>Subscriptions</h1>
    <p>You follow {count(page.total, "podcast", "podcasts")}, listed in the order you subscribed.</p>
    {page.rows.length === 0 ? (
      <p>
        {page.total === 0 ? "No subscriptions yet: subscribe in a connected app, or import an OPML file." : "No more."}
      </p>
    ) : (
      <ul class="feeds">
        {page.rows.map((row) => (
          <li>
            <PodcastName row={row} />
            <form method="post" action="/account/subscriptions/unsubscribe">
              <AntiForgeryField account={account} />
              <input type="hidden" name="guid" value={row.guid} />
              <input type="hidden" name="return_to" value={links.here} />
              <button type="submit" class="danger">
                Unsubscribe<ScreenReaderOnly> from {row.podcast.title ?? row.feedUrl}</ScreenReaderOnly>
              </button>
            </form>
          </li>
        ))}
      </ul>
    )}
    {links.previous || links.next ? (
      <nav aria-label="Pages" class="pages">
        {links.previous ? (
          <a href={links.previous} rel="prev">
            Previous
          </a>
        ) : null}
        {links.next ? (
          <a href={links.next} rel="next">
            Next
          </a>
        ) : null}
      </nav>
    ) : null}
    <OpmlForms account={account} />
  </Layout>
);

/** `POST /account/opml`: how many were added, and each skipped outline with its reason. */
export const ImportResultView: FC<{ account: SignedInAccount; summary: ImportSummary }> = ({ account, summary }) => (
  <Layout title="OPML import" account={account} current="/account/subscriptions">
    <h1>OPML import</h1>
    <p role="status">
      Added {count(summary.imported, "podcast", "podcasts")}; {count(summary.alreadySubscribed, "was", "were")} already
      among your subscriptions; {count(summary.skipped.length, "outline was", "outlines were")} skipped.
    </p>
    {summary.skipped.length > 0 ? (
      <>
        <h2>Skipped</h2>
        <ul class="skipped">
          {summary.skipped.map((skipped) => (
            <li>
              <span class="url">{skipped.xmlUrl === "" ? "(no address)" : skipped.xmlUrl}</span>: {skipped.reason}
            </li>
          ))}
        </ul>
      </>
    ) : null}
    <p class="actions">
      <a href="/account/subscriptions">Back to your subscriptions</a>
    </p>
  </Layout>
);

const Progress: FC<{ episode: RecentEpisode }> = ({ episode }) => {
  const known = episode.duration !== null && episode.duration > 0;
  return (
    <div class="progress">
      {known ? (
        <>
          <progress
            max={episode.duration as number}
            value={Math.min(episode.position, episode.duration as number)}
            aria-label={`Position in ${episode.mediaUrl}`}
          />
          <span>
            {duration(episode.position)} of {duration(episode.duration as number)}
          </span>
        </>
      ) : (
        <span>{episode.position > 0 ? `at ${duration(episode.position)} (length unknown)` : "length unknown"}</span>
      )}
      <span class={episode.played ? "played" : "unplayed"}>{episode.played ? "Played" : "Not played"}</span>
    </div>
  );
};

/** `GET /account/progress`: the 50 episode states changed last, with progress bars. */
export const ProgressView: FC<{ account: SignedInAccount; episodes: RecentEpisode[]; limit: number }> = ({
  account,
  episodes,
  limit,
}) => (
  <Layout title="Listening progress" account={account} current="/account/progress">
    <h1>Listening progress</h1>
    <p>The {limit} episodes whose progress changed last, newest first.</p>
    {episodes.length === 0 ? (
      <p>Nothing yet: your apps send progress here as you listen.</p>
    ) : (
      <ol class="episodes">
        {episodes.map((episode) => (
          <li>
            <span class="url">{episode.mediaUrl}</span>
            {episode.feedUrl ? <span class="feed">from {episode.podcastTitle ?? episode.feedUrl}</span> : null}
            <Progress episode={episode} />
            <span class="when">changed {dateTime(episode.receivedAt * 1000)}</span>
          </li>
        ))}
      </ol>
    )}
  </Layout>
);

/** `GET /account/erase`, and its answer when `Confirm` did not say `erase`. */
export const EraseView: FC<{ account: SignedInAccount; refused?: string }> = ({ account, refused }) => (
  <Layout title="Erase your account" account={account} current="/account/erase">
    <h1>Erase your account</h1>
    {refused !== undefined ? (
      <p class="problem" role="alert">
        {refused}
      </p>
    ) : null}
    <p>
      Erasing deletes everything this service keeps for you: subscriptions, listening progress, devices and app
      passwords. Your apps stop syncing within a minute, and you are signed out everywhere. It cannot be undone; export
      your subscriptions first if you want to keep them.
    </p>
    <form method="post" action="/account/erase">
      <AntiForgeryField account={account} />
      <div class="field">
        <label for="confirm">Confirm</label>
        <input id="confirm" name="confirm" type="text" autocomplete="off" aria-describedby="confirm-hint" />
        <p id="confirm-hint" class="hint">
          Type the word <kbd>erase</kbd> to confirm.
        </p>
      </div>
      <button type="submit" class="danger">
        Erase my account
      </button>
    </form>
  </Layout>
);

/** The answer to a confirmed erasure: signed out, nothing left. */
export const ErasedView: FC = () => (
  <Layout title="Account erased">
    <h1>Your account is erased</h1>
    <p role="status">
      Everything this service kept for you is gone, and you are signed out. Signing in again starts an empty account.
    </p>
    <p class="actions">
      <a href="/">Home</a>
    </p>
  </Layout>
);
