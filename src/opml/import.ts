import { podcastGuid } from "../podcast-guid";
import { guidSchema } from "../resources/resource-object";
import {
  type NewSubscription,
  parseSubscriptionResource,
  SUBSCRIPTION_TYPE,
  subscriptionRefused,
} from "../resources/subscription";
import type { OpmlOutline } from "./parse";

/**
 * From an OPML file's outlines to subscriptions (docs/API.md §11): each outline names a
 * subscription like a POST of `{type: "subscription", id: <guid>, attributes: {feedUrl: <xmlUrl>}}`,
 * checked by the same validator as the JSON endpoints; the ones it refuses are skipped with its reason.
 */

export interface SkippedFeed {
  /** As in the file. */
  xmlUrl: string;
  reason: string;
}

export interface ImportPlan {
  /** The valid outlines, in document order: what goes to the database. */
  subscriptions: NewSubscription[];
  /** Document position of each element of `subscriptions`. */
  positions: number[];
  /** Outlines refused before the database, with their document position. */
  invalid: (SkippedFeed & { position: number })[];
}

/**
 * What the database did with one subscription of the plan (`limit`: the user's quota was full, `storage`: the
 * storage budget, both after purging tombstones).
 */
export type ImportOutcome = "created" | "exists" | "limit" | "storage";

export interface ImportSummary {
  imported: number;
  alreadySubscribed: number;
  /** In document order. */
  skipped: SkippedFeed[];
}

/** The outline's `guid` attribute when it is a UUID, else the podcast:guid of its `xmlUrl`. */
export async function outlineGuid(outline: OpmlOutline): Promise<string> {
  if (outline.guid !== undefined && guidSchema.safeParse(outline.guid).success) return outline.guid;
  return podcastGuid(outline.xmlUrl);
}

export async function planImport(outlines: readonly OpmlOutline[]): Promise<ImportPlan> {
  const guids = await Promise.all(outlines.map(outlineGuid));
  const plan: ImportPlan = { subscriptions: [], positions: [], invalid: [] };
  outlines.forEach((outline, position) => {
    const resource = { type: SUBSCRIPTION_TYPE, id: guids[position], attributes: { feedUrl: outline.xmlUrl } };
    const parsed = parseSubscriptionResource(resource, "");
    if (parsed.ok) {
      plan.subscriptions.push(parsed.value);
      plan.positions.push(position);
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
    else if (outcome === "exists") alreadySubscribed++;
    else {
      const reason = subscriptionRefused({ kind: outcome }).detail;
      skipped.push({ xmlUrl: plan.subscriptions[index].feedUrl, reason, position: plan.positions[index] });
    }
  });
  skipped.sort((a, b) => a.position - b.position);
  return { imported, alreadySubscribed, skipped: skipped.map(({ xmlUrl, reason }) => ({ xmlUrl, reason })) };
}
