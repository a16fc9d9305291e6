import { podcastGuid } from "../podcast-guid";
import {
  guidSchema,
  type NewSubscription,
  parseSubscriptionResource,
  SUBSCRIPTION_TYPE,
} from "../resources/subscription";
import type { OpmlOutline } from "./parse";

/**
 * From an OPML file's outlines to subscriptions (CONTRACT: OPML import): each outline names a
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

/** What the database did with one subscription of the plan. */
export type ImportOutcome = "created" | "exists";

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

/** The import's `meta`: `outcomes[i]` is what became of `plan.subscriptions[i]`. */
export function summariseImport(plan: ImportPlan, outcomes: readonly ImportOutcome[]): ImportSummary {
  let imported = 0;
  let alreadySubscribed = 0;
  for (const outcome of outcomes) {
    if (outcome === "created") imported++;
    else alreadySubscribed++;
  }
  const skipped = plan.invalid
    .sort((a, b) => a.position - b.position)
    .map(({ xmlUrl, reason }) => ({ xmlUrl, reason }));
  return { imported, alreadySubscribed, skipped };
}
