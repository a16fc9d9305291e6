import { WriteBatch } from "../db/batch";
import type { Database } from "../db/database";
import { subscribeMany } from "../db/subscriptions";
import { podcastGuidSync } from "../podcast-guid";
import { parseGuid } from "../resources/resource-object";
import {
  type NewSubscription,
  parseSubscriptionResource,
  SUBSCRIPTION_TYPE,
  subscriptionRefused,
} from "../resources/subscription";
import { trimUrlWhitespace } from "../url-text";
import { type OpmlOutline, parseOpml } from "./parse";

/**
 * From an OPML file's outlines to subscriptions (docs/API.md §11): each outline names a
 * subscription like a POST of `{type: "subscription", id: <guid>, attributes: {feedUrl: <xmlUrl>}}`,
 * checked by the same validator as the JSON endpoints; the ones it refuses are skipped with its reason.
 */

export interface SkippedFeed {
  /** The outline's `xmlUrl` (or `url`) as in the file. */
  xmlUrl: string;
  reason: string;
}

export interface ImportPlan {
  /** The valid outlines, in document order: what goes to the database. */
  subscriptions: NewSubscription[];
  /** Document position of each element of `subscriptions`. */
  positions: number[];
  /** The URL attribute of each element of `subscriptions` as in the file (before trimming). */
  asInFile: string[];
  /** Outlines refused before the database, with their document position. */
  invalid: (SkippedFeed & { position: number })[];
}

/**
 * What the database did with one subscription of the plan (`limit`: the user's quota was full, `storage`: the
 * storage budget, both after purging tombstones).
 */
export type ImportOutcome = "created" | "exists" | "alias" | "limit" | "storage";

export interface ImportSummary {
  imported: number;
  alreadySubscribed: number;
  /** In document order. */
  skipped: SkippedFeed[];
}

/**
 * The outline's `guid` attribute when it is a UUID, else the podcast:guid of its (trimmed) feed URL. Computed at
 * once, not through a promise each: an import names up to a thousand feeds.
 */
export function outlineGuid(outline: OpmlOutline, feedUrl: string): string {
  // parseGuid recognises a usual UUID without zod (an export of this service gives every outline its guid).
  if (outline.guid !== undefined && parseGuid(outline.guid) !== undefined) return outline.guid;
  return podcastGuidSync(feedUrl);
}

export function planImport(outlines: readonly OpmlOutline[]): ImportPlan {
  const plan: ImportPlan = { subscriptions: [], positions: [], asInFile: [], invalid: [] };
  outlines.forEach((outline, position) => {
    // Exporters pad attributes (`xmlUrl=" https://... "`); gPodder and other readers trim them, so does this.
    const feedUrl = trimUrlWhitespace(outline.xmlUrl);
    const resource = { type: SUBSCRIPTION_TYPE, id: outlineGuid(outline, feedUrl), attributes: { feedUrl } };
    const parsed = parseSubscriptionResource(resource, "");
    if (parsed.ok) {
      plan.subscriptions.push(parsed.value);
      plan.positions.push(position);
      plan.asInFile.push(outline.xmlUrl);
    } else {
      plan.invalid.push({ xmlUrl: outline.xmlUrl, reason: parsed.error.detail, position });
    }
  });
  return plan;
}

/**
 * The import's `meta`: `outcomes[i]` is what became of `plan.subscriptions[i]`. Feeds refused by the
 * quota join the invalid ones in `skipped`, all in file order.
 */
export function summariseImport(plan: ImportPlan, outcomes: readonly ImportOutcome[]): ImportSummary {
  let imported = 0;
  let alreadySubscribed = 0;
  const skipped = [...plan.invalid];
  outcomes.forEach((outcome, index) => {
    if (outcome === "created") imported++;
    // An alias of an active subscription (docs/API.md §18) is that subscription.
    else if (outcome === "exists" || outcome === "alias") alreadySubscribed++;
    else {
      const reason = subscriptionRefused({ kind: outcome }).detail;
      skipped.push({ xmlUrl: plan.asInFile[index], reason, position: plan.positions[index] });
    }
  });
  skipped.sort((a, b) => a.position - b.position);
  return { imported, alreadySubscribed, skipped: skipped.map(({ xmlUrl, reason }) => ({ xmlUrl, reason })) };
}

/**
 * Imports an OPML file (the API's `POST /v1/subscriptions.opml` and the account page's `Import`): every valid
 * outline subscribed in one batch (one round trip, one transaction). Answers the summary, and the batch and the
 * number of feeds written, for the caller to charge to the user's rate limit.
 */
export async function importOpml(
  db: Database,
  user: string,
  file: BufferSource,
  at: number,
): Promise<{ summary: ImportSummary; batch: WriteBatch; feeds: number }> {
  const plan = planImport(parseOpml(file));
  const batch = new WriteBatch();
  const results = await subscribeMany(db, user, plan.subscriptions, at, batch);
  const summary = summariseImport(
    plan,
    results.map((result) => result.kind),
  );
  return { summary, batch, feeds: plan.subscriptions.length };
}
