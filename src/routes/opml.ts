import { Hono } from "hono";
import type { AppEnv } from "../env";
import { JSONAPI_VERSION, respond } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { negotiateOpmlExport, negotiateOpmlImport } from "../middleware/negotiation";
import { chargeRenumbering } from "../middleware/rate-limit";
import { opmlExport } from "../opml/export";
import { importOpml } from "../opml/import";
import { OPML_CONTENT_TYPE } from "../opml/media-types";
import { noQueryParameters } from "../pagination";
import { readBody } from "../request-body";

/** OPML 2.0 export and merge-import of the user's subscriptions (docs/API.md §11). */
export const opmlRoutes = new Hono<AppEnv>()

  // Export: every active subscription, in list order, with its guid so a re-import maps to the same resources.
  // Streamed page by page (docs/API.md §15): memory does not grow with the account. The first page is read
  // before the response starts, so an unreachable database is still a 503 from onError.
  .get("/", negotiateOpmlExport, noQueryParameters, async (c) => {
    const stream = await opmlExport(c.get("db"), c.get("userId"), c.get("requestId"));
    return c.body(stream, 200, {
      "Content-Type": OPML_CONTENT_TYPE,
      "Content-Disposition": 'attachment; filename="subscriptions.opml"',
    });
  })

  // Import: subscribes to every outline with an xmlUrl (merge: nothing is removed), in one D1 round trip (one
  // transaction, docs/API.md §11), charged to the rate limit as the bulk requests of 100 doing the same would be.
  .post("/", negotiateOpmlImport, noQueryParameters, async (c) => {
    const file = await readBody(c.req.raw, MAX_BODY_BYTES);
    const { summary, batch, feeds } = await importOpml(c.get("db"), c.get("userId"), file, Date.now());
    await chargeRenumbering(c, batch, feeds);
    return respond(c, { jsonapi: { version: JSONAPI_VERSION }, meta: summary });
  });
