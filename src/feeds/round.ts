import type { Database } from "../db/database";
import type { RehomedState } from "../db/episode-rehomes";
import type { LearnedMove } from "../db/feed-aliases";
import { type DueFeed, dueFeeds, type FeedRecord, recordFeeds } from "../db/feeds";
import { FETCH_TIMEOUT_MS, type FetchOutcome, type FetchSettings, fetchFeed, MAX_HEAD_BYTES } from "./fetch";
import { type FeedAnswer, MoveChain, NEW_FEED_URL_HOPS } from "./moves";
import { type ChannelFacts, NotAFeedError, parseChannelHead, withShortCdata } from "./parse";

/**
 * One feed round (docs/API.md §18), run by the scheduled handler every 10 minutes: in every database, the feeds
 * due (never tried first, then the longest waiting), each URL fetched once however many databases and users name
 * it, each outcome written back to every database that had the feed, one batch per database. A round stays within
 * the Workers Free plan's 50 subrequests and 10 ms of CPU with the retention job beside it (bench/README.md
 * measures both): at most FEEDS_PER_ROUND URLs, at most FETCHES_PER_ROUND requests counting redirects.
 *
 * A round also learns where feeds have moved (src/feeds/moves.ts): the URLs its feeds' answers name as their new
 * ones are fetched after them, out of the same subrequests, bytes and parse share, and each move learned is written
 * to every database that holds the feed, in the same batch as its outcome.
 */

export const FEEDS_PER_ROUND = 8;
export const FETCHES_PER_ROUND = 24;
/** A feed fetched successfully is due again after this: under 24 hours, so a round's delay keeps it daily. */
export const REFRESH_MS = 23 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;
export const MAX_BACKOFF_MS = 7 * 24 * HOUR_MS;
/** Failures for this long (since the last success) mark the podcast `gone`; it stays subscribed. */
export const GONE_AFTER_MS = 30 * 24 * HOUR_MS;
/** Validators longer than this are not kept (a header of a hostile server). */
const MAX_VALIDATOR = 256;
/**
 * The parse is most of the round's CPU (fetches wait without it): at most this much of the heads is parsed a
 * round; a head past what is left waits for the next round, where it is first in line (its feed stays due). The
 * first head of a round is always parsed (at most MAX_HEAD_BYTES). A real channel head is 2 to 16 KiB; this bounds
 * what hostile ones cost (bench/README.md, "The feed round").
 */
export const HEAD_CHARS_PER_ROUND = 128 * 1024;
/**
 * Reading a body is CPU too (decoding, the search for the first item): the URLs named as feeds' new ones are read
 * only out of what the round's own fetches left of this, at most what FEEDS_PER_ROUND heads of MAX_HEAD_BYTES read
 * (a round of hostile feeds then reads no more than it did before moves were learned).
 */
export const READ_BYTES_PER_ROUND = FEEDS_PER_ROUND * MAX_HEAD_BYTES;

export interface FeedRoundSettings {
  /** `FEED_FETCH=off`: nothing is fetched. */
  enabled: boolean;
  /** `FEED_FETCH_ALLOW_PRIVATE=true`: loopback and private addresses may be fetched (tests, local development). */
  allowPrivate: boolean;
  userAgent: string;
  /**
   * At most this many subscriptions a learned move changes per statement (src/db/feed-aliases.ts,
   * MOVED_SUBSCRIPTIONS_PER_STATEMENT unless set; a test sets fewer), at most two statements per database a run.
   */
  movesPerStatement?: number;
}

export interface FeedRoundSummary {
  fetched: number;
  notModified: number;
  failed: number;
  gone: number;
  forgotten: number;
  deferred: number;
  /** Moves learned (src/feeds/moves.ts), each written to every database that holds the feed. */
  moved: number;
  /** Subscriptions the learned moves changed this run, in all databases. */
  subscriptionsMoved: number;
  /**
   * Episode states a merge re-homed that this run gave the kept podcast's ids, in all databases
   * (src/db/episode-rehomes.ts: those read; at most REHOMES_PER_ROUND per database, the rest in the next runs).
   */
  statesRenamed: number;
  subrequests: number;
}

/** The user agent of every fetch: the service, and where it runs when PUBLIC_BASE_URL is set. */
export function feedUserAgent(baseUrl: string | undefined): string {
  return `podcast-subscriptions feed fetcher${baseUrl ? ` (+${baseUrl})` : ""}`;
}

const bounded = (value: string | null) => (value !== null && value.length <= MAX_VALIDATOR ? value : null);

/** What a fetch came to once its head (if any) was parsed. */
type RoundOutcome =
  | Exclude<FetchOutcome, { kind: "feed" }>
  | ({ kind: "parsed"; facts: ChannelFacts } & Omit<Extract<FetchOutcome, { kind: "feed" }>, "kind" | "head">);

/** What is left of the round's parse share; the round's first head is parsed whatever its length. */
interface ParseShare {
  left: number;
  first: boolean;
}

/**
 * Parses the heads within the round's share of CPU (HEAD_CHARS_PER_ROUND), shortest first, so that one long head
 * never costs the round its short ones; the first is always parsed, and a head past what is left waits its turn.
 */
function parseAll(outcomes: readonly FetchOutcome[], share: ParseShare): RoundOutcome[] {
  const parsed: RoundOutcome[] = [...outcomes] as RoundOutcome[];
  // What the parse reads of each head (its long CDATA cut), which is what its CPU is in proportion to.
  const heads = outcomes.flatMap((outcome, n) =>
    outcome.kind === "feed" ? [{ n, outcome, text: withShortCdata(outcome.head) }] : [],
  );
  heads.sort((a, b) => a.text.length - b.text.length);
  for (const { n, outcome, text } of heads) {
    const { head: _head, kind: _kind, ...arrival } = outcome;
    if (!share.first && text.length > share.left) {
      parsed[n] = { kind: "deferred" };
      continue;
    }
    share.first = false;
    share.left -= text.length;
    try {
      parsed[n] = { kind: "parsed", facts: parseChannelHead(text), ...arrival };
    } catch (err) {
      if (!(err instanceof NotAFeedError)) throw err;
      parsed[n] = { kind: "failed", error: err.message };
    }
  }
  return parsed;
}

/** The record a database keeps of an outcome, from its own row of the feed (its failures so far). */
function recordOf(feed: DueFeed & { url: string }, outcome: RoundOutcome, at: number): FeedRecord {
  const { urlKey, url } = feed;
  switch (outcome.kind) {
    case "deferred":
      return { kind: "deferred", urlKey, nextFetchAt: feed.nextFetchAt };
    case "not-modified":
      return { kind: "not-modified", urlKey, url, finalUrl: outcome.finalUrl, nextFetchAt: at + REFRESH_MS };
    case "parsed":
      return {
        kind: "fetched",
        urlKey,
        url,
        finalUrl: outcome.finalUrl,
        facts: outcome.facts,
        etag: bounded(outcome.etag),
        lastModified: bounded(outcome.lastModified),
        nextFetchAt: at + REFRESH_MS,
      };
    case "gone":
      return failedRecord(feed, outcome.error, true, at);
    case "failed":
      return failedRecord(feed, outcome.error, false, at);
  }
}

/** A failure: retried after 1 hour, doubling, at most 7 days; `gone` after a 410 or 30 days of failures. */
function failedRecord(feed: DueFeed & { url: string }, error: string, gone: boolean, at: number): FeedRecord {
  const failures = feed.failures + 1;
  const failingSince = feed.failingSince ?? at;
  const wait = Math.min(HOUR_MS * 2 ** Math.min(failures - 1, 30), MAX_BACKOFF_MS);
  return {
    kind: "failed",
    urlKey: feed.urlKey,
    url: feed.url,
    status: gone || feed.status === "gone" || at - failingSince >= GONE_AFTER_MS ? "gone" : "failing",
    error,
    failures,
    failingSince,
    nextFetchAt: at + wait,
  };
}

/**
 * Fetches under way at once. A Worker has at most six connections waiting for their answers' headers and queues
 * the next one; a queued fetch's 10 s would run out while it waits behind hosts that never answer. Five leaves
 * the sixth to D1.
 */
export const FETCHES_AT_ONCE = 5;

/** `work` of every item, at most `width` at a time, the results in the items' order. */
async function inTurns<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const n = next++;
      results[n] = await work(items[n]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return results;
}

export async function runFeedRound(
  databases: ReadonlyMap<string, Database>,
  settings: FeedRoundSettings,
  at: number,
): Promise<FeedRoundSummary> {
  const summary: FeedRoundSummary = {
    fetched: 0,
    notModified: 0,
    failed: 0,
    gone: 0,
    forgotten: 0,
    deferred: 0,
    moved: 0,
    subscriptionsMoved: 0,
    statesRenamed: 0,
    subrequests: 0,
  };
  if (!settings.enabled) return summary;
  const named = [...databases];
  const movesLimit = settings.movesPerStatement;
  const rehomed = named.map((): RehomedState[] => []);
  const due = (await Promise.all(named.map(([, db]) => dueFeeds(db, at, FEEDS_PER_ROUND, movesLimit)))).map(
    (read, index) => {
      summary.subscriptionsMoved += read.moved;
      rehomed[index] = read.rehomed;
      summary.statesRenamed += read.rehomed.length;
      return read.feeds;
    },
  );
  summary.subrequests += named.length;

  // Each URL once, in the order the databases have them due; a feed no subscription names any more is forgotten.
  const records = named.map((): FeedRecord[] => []);
  const byUrl = new Map<string, { index: number; feed: DueFeed & { url: string } }[]>();
  due.forEach((feeds, index) => {
    for (const feed of feeds) {
      if (feed.url === null) {
        records[index].push({ kind: "forgotten", urlKey: feed.urlKey });
        summary.forgotten++;
        continue;
      }
      const holders = byUrl.get(feed.url) ?? [];
      holders.push({ index, feed: { ...feed, url: feed.url } });
      byUrl.set(feed.url, holders);
    }
  });
  const queued = [...byUrl];
  const round = queued.slice(0, FEEDS_PER_ROUND);
  // Claimed by another database's share of the round, but past its feeds: due again as they were.
  for (const [, holders] of queued.slice(FEEDS_PER_ROUND)) {
    for (const { index, feed } of holders) {
      records[index].push({ kind: "deferred", urlKey: feed.urlKey, nextFetchAt: feed.nextFetchAt });
    }
    summary.deferred++;
  }
  const subrequests = { left: FETCHES_PER_ROUND };
  const fetchSettings = { ...settings, timeoutMs: FETCH_TIMEOUT_MS, subrequests, read: { bytes: 0 } };
  const fetched = await inTurns(round, FETCHES_AT_ONCE, ([url, holders]) => {
    // Validators only when every database holds the same ones: a 304 answers exactly the copy that was named.
    const [{ etag, lastModified }, ...others] = holders.map(({ feed }) => feed);
    const same = others.every((other) => other.etag === etag && other.lastModified === lastModified);
    return fetchFeed(url, same ? { etag, lastModified } : { etag: null, lastModified: null }, fetchSettings);
  });
  const share = { left: HEAD_CHARS_PER_ROUND, first: true };
  const outcomes = parseAll(fetched, share);
  const answers = new Map(round.map(([url, holders], n) => [url, answerOf(url, outcomes[n], holders[0].feed)]));
  const moves = await learnMoves(answers, fetchSettings, share);
  summary.moved = moves.length;
  summary.subrequests += FETCHES_PER_ROUND - subrequests.left;
  round.forEach(([, holders], n) => {
    const kept = holders.map(({ index, feed }) => ({ index, record: recordOf(feed, outcomes[n], at) }));
    const first = kept[0].record;
    if (first.kind === "deferred") summary.deferred++;
    else if (first.kind === "fetched") summary.fetched++;
    else if (first.kind === "not-modified") summary.notModified++;
    else if (first.kind === "failed") summary[first.status === "gone" ? "gone" : "failed"]++;
    for (const { index, record } of kept) records[index].push(record);
  });
  // A move goes to each database that holds the feed that moved (the one whose users it concerns); another database
  // learns it when it first fetches that feed itself.
  const movesOf = named.map((): LearnedMove[] => []);
  for (const move of moves) for (const { index } of byUrl.get(move.from) ?? []) movesOf[index].push(move);
  const written = named.filter(
    (_, index) => records[index].length > 0 || movesOf[index].length > 0 || rehomed[index].length > 0,
  );
  const moved = await Promise.all(
    named.map(([, db], index) => recordFeeds(db, records[index], movesOf[index], at, movesLimit, rehomed[index])),
  );
  summary.subscriptionsMoved += moved.reduce((sum, count) => sum + count, 0);
  summary.subrequests += written.length;
  return summary;
}

/**
 * What a feed's outcome says about where it is (src/feeds/moves.ts): a parsed head's, or for a `304` what the last
 * `200` said (the same document, so the same `new-feed-url` and `podcast:guid`; a named URL is fetched without
 * validators, so it has no `304`); nothing from a failure.
 */
function answerOf(
  url: string,
  outcome: RoundOutcome,
  known: Pick<DueFeed, "podcastGuid" | "newFeedUrl"> | null,
): FeedAnswer | null {
  if (outcome.kind === "parsed") {
    const { finalUrl, permanent, facts } = outcome;
    return { url, finalUrl, permanent, podcastGuid: facts.podcastGuid, newFeedUrl: facts.newFeedUrl };
  }
  if (outcome.kind === "not-modified" && known !== null) {
    const { finalUrl, permanent } = outcome;
    return { url, finalUrl, permanent, podcastGuid: known.podcastGuid, newFeedUrl: known.newFeedUrl };
  }
  return null;
}

const NO_VALIDATORS = { etag: null, lastModified: null };

/**
 * The moves the round's answers (by URL) lead to: each URL they name as their new one fetched (once a round however
 * many name it, and not at all when the round already fetched it; without validators: its head is what is
 * checked), read and parsed out of what is left of the round's subrequests, bytes (READ_BYTES_PER_ROUND) and parse
 * share, hop by hop across all the round's feeds, at most NEW_FEED_URL_HOPS. A URL the round could not fetch or
 * parse ends its chain where it was, as a failed one does; the next fetch of the feed tries again.
 */
async function learnMoves(
  answers: Map<string, FeedAnswer | null>,
  settings: FetchSettings & { read: { bytes: number } },
  share: ParseShare,
): Promise<LearnedMove[]> {
  // A named URL is fetched only while a whole head's bytes are left (counting the fetches under way as whole heads).
  let reserved = 0;
  const fetchNamed = async (url: string): Promise<FetchOutcome> => {
    if (READ_BYTES_PER_ROUND - settings.read.bytes - reserved < MAX_HEAD_BYTES) return { kind: "deferred" };
    reserved += MAX_HEAD_BYTES;
    try {
      return await fetchFeed(url, NO_VALIDATORS, settings);
    } finally {
      reserved -= MAX_HEAD_BYTES;
    }
  };
  const chains = [...answers.values()].flatMap((answer) => (answer === null ? [] : [new MoveChain(answer)]));
  for (let hop = 0; hop < NEW_FEED_URL_HOPS; hop++) {
    const open = chains.filter((chain) => chain.next !== null);
    if (open.length === 0) break;
    const named = [...new Set(open.map((chain) => chain.next as string))].filter((url) => !answers.has(url));
    const fetched = await inTurns(named, FETCHES_AT_ONCE, fetchNamed);
    const parsed = parseAll(fetched, share);
    for (const [n, url] of named.entries()) answers.set(url, answerOf(url, parsed[n], null));
    for (const chain of open) chain.answered(answers.get(chain.next as string) ?? null);
  }
  return chains.flatMap((chain) => {
    const move = chain.move();
    return move === null ? [] : [move];
  });
}
