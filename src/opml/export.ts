import type { Database } from "../db/database";
import { activeFeedPagesWithPodcasts } from "../db/opml";
import { withFirst } from "../text-stream";
import { opmlStream } from "./serialise";

/**
 * The OPML export of the user's active subscriptions (the API's `GET /v1/subscriptions.opml` and the account
 * page's `Export OPML`), each feed named by its podcast's title when known (docs/API.md §18): streamed page by page (docs/API.md §15), so memory does not grow with the account. The
 * first page is read before the stream is handed back, so an unreachable database is still an error answer.
 */
export async function opmlExport(db: Database, user: string, requestId: string): Promise<ReadableStream<Uint8Array>> {
  const pages = activeFeedPagesWithPodcasts(db, user);
  const first = await pages.next();
  return opmlStream(withFirst(first, pages), new Date(), (err) =>
    console.error(JSON.stringify({ level: "error", requestId, event: "opml_export_failed", error: String(err) })),
  );
}
