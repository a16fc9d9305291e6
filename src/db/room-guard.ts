import { sql } from "drizzle-orm";
import type { Database } from "./database";
import { MAX_STORED_EPISODES } from "./episodes";
import { userStats as stats } from "./schema";
import { statement } from "./statements";
import { MAX_URL_BYTES, statOf } from "./storage";
import { MAX_STORED_SUBSCRIPTIONS } from "./subscriptions";

const userId = sql.placeholder("userId");

/**
 * What the writes of a bulk request may add at most (docs/API.md §15): rows of each kind and URL bytes. When the
 * user's stats plus all of it stay within the quotas and the budget, no write of the request can need room, so
 * its room statements would all find nothing to do and are left out; one leading statement checks that
 * (`guardStatement`) and fails the whole batch otherwise, which then runs again with every room.
 */
export class RoomGuard {
  subscriptions = 0;
  episodes = 0;
  bytes = 0;

  private placed = false;

  /** `place` puts the guard statement in the batch: called by the first write that counts, before its own statements. */
  constructor(private readonly place: (guard: RoomGuard) => void) {}

  /** A write that may add a row of a kind and the UTF-8 bytes of the URL text it sends. */
  add(kind: "subscriptions" | "episodes" | undefined, ...texts: (string | null | undefined)[]): void {
    if (!this.placed) {
      this.placed = true;
      this.place(this);
    }
    if (kind) this[kind]++;
    for (const text of texts) if (text) this.bytes += utf8Length(text);
  }

  bind(db: Database, user: string): D1PreparedStatement {
    return guardStatement.bind(db, {
      userId: user,
      subscriptions: this.subscriptions,
      episodes: this.episodes,
      bytes: this.bytes,
    });
  }
}

/**
 * The token the guard's failure carries (the JSON path error of a path made of it and a subquery's count, so
 * that SQLite cannot evaluate it before the CASE picks it): how the route tells it from D1 failing.
 */
export const ROOM_GUARD_TOKEN = "room_guard";

/** Whether a batch failed because its guard found the request might need room. */
export function isRoomGuardFailure(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error && cause.message.includes(ROOM_GUARD_TOKEN);
}

const guardStatement = statement(sql`
  SELECT CASE WHEN coalesce(${statOf(stats.storedCount)}, 0) + ${sql.placeholder("subscriptions")} <= ${MAX_STORED_SUBSCRIPTIONS}
    AND coalesce(${statOf(stats.episodeCount)}, 0) + ${sql.placeholder("episodes")} <= ${MAX_STORED_EPISODES}
    AND coalesce(${statOf(stats.urlBytes)}, 0) + ${sql.placeholder("bytes")} <= ${MAX_URL_BYTES}
    THEN 1 ELSE json_extract('{}', (SELECT ${sql.raw(`'${ROOM_GUARD_TOKEN}'`)} || count(*) FROM ${stats} WHERE ${stats.userId} = ${userId})) END AS fits`);

/** UTF-8 bytes of a text (each UTF-16 unit of a surrogate pair counts 2: 4 for the pair). */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0x80) bytes += unit >= 0x800 && (unit < 0xd800 || unit > 0xdfff) ? 2 : 1;
  }
  return bytes;
}
