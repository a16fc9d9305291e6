import { type Context, Hono } from "hono";
import * as z from "zod";
import type { AtomicResult, OperationKind } from "../atomic-operations";
import { type ChangeFeed, changeFeedPage } from "../change-feed";
import { WriteBatch } from "../db/batch";
import {
  type EpisodeOperation,
  type EpisodeWriteResult,
  episodeWriter,
  findEpisode,
  listEpisodeChanges,
} from "../db/episodes";
import type { AppEnv } from "../env";
import { ApiError, absoluteUrl, dataDocument, type ErrorObject, pointerTo, respond } from "../jsonapi";
import { uuidParam } from "../middleware/guid-param";
import { jsonBody } from "../middleware/json-body";
import { negotiate } from "../middleware/negotiation";
import { chargeRenumbering } from "../middleware/rate-limit";
import { changeFeedQuery, noQueryParameters } from "../pagination";
import { conditionalResource } from "../resource-response";
import {
  EPISODE_TYPE,
  episodeFeedMismatch,
  episodeLimitReached,
  episodeNotFound,
  episodeNotFoundAt,
  episodePath,
  mediaUrlRequired,
  parseEpisodePatch,
  parseEpisodeResource,
  toEpisodeResource,
} from "../resources/episode";
import { invalidDocument, type ResourceRef, storageLimitReached, type Validated } from "../resources/resource-object";

const COLLECTION_PATH = "/v1/episodes";

const idParam = uuidParam("id");

const jsonApi = negotiate("none");

/** The episode change feed (docs/API.md §13): the subscriptions' rules with its own sequence. */
const episodeChanges: ChangeFeed = { path: COLLECTION_PATH, read: listEpisodeChanges };

/** The pointer of the feed guid a write names: a 409 there when the stored state belongs to another feed. */
const feedPointer = (base: string) => pointerTo(base, "relationships", "subscription", "data", "id");

/** The body of POST and PATCH: a document with one resource object, validated by the resource module. */
const episodeDocumentSchema = z.looseObject({ data: z.unknown() });

function episodeDocumentError(_error: z.core.$ZodError, body: unknown): ApiError {
  return ApiError.from(
    invalidDocument(
      "",
      `${body === null || Array.isArray(body) ? "The request body" : "The request body"} must be a JSON object.`,
    ),
  );
}

/** Writes one operation in its own batch (one round trip) and returns its result. */
async function writeOne(c: Context<AppEnv>, operation: EpisodeOperation): Promise<EpisodeWriteResult> {
  const db = c.get("db");
  const batch = new WriteBatch();
  const read = episodeWriter({ batch, db, user: c.get("userId"), at: Date.now() })(operation);
  await batch.run(db);
  await chargeRenumbering(c, batch);
  return read();
}

function valid<T>(result: Validated<T>): T {
  if (!result.ok) throw ApiError.from(result.error);
  return result.value;
}

export const episodeRoutes = new Hono<AppEnv>()

  // The episode change feed; without filter[since] it starts from 0 (docs/API.md §13).
  .get("/", jsonApi, changeFeedQuery, (c) => changeFeedPage(c, episodeChanges, c.req.valid("query")))

  // Create an episode state, or merge into it (docs/API.md §13).
  .post("/", jsonApi, noQueryParameters, jsonBody(episodeDocumentSchema, episodeDocumentError), async (c) => {
    const episode = valid(parseEpisodeResource(c.req.valid("json").data, "/data", Date.now()));
    const result = await writeOne(c, { op: "add", ...episode });
    switch (result.kind) {
      case "created":
        return respond(c, dataDocument(toEpisodeResource(result.episode)), 201, {
          Location: absoluteUrl(c, episodePath(result.episode.id)),
        });
      case "merged":
        return respond(c, dataDocument(toEpisodeResource(result.episode)));
      case "feed-mismatch":
        throw ApiError.from(episodeFeedMismatch(feedPointer("/data"), result.feedGuid));
      default:
        throw ApiError.from(failedWrite(result));
    }
  })

  // One episode state of the user.
  .get("/:id", jsonApi, idParam, noQueryParameters, (c) => {
    const { id } = c.req.valid("param");
    return conditionalResource(
      c,
      episodePath(id),
      async () => {
        const { version, episode } = await findEpisode(c.get("db"), c.get("userId"), id);
        return { version, found: episode };
      },
      toEpisodeResource,
      episodeNotFound,
    );
  })

  // Merge into an existing state (docs/API.md §13).
  .patch(
    "/:id",
    jsonApi,
    idParam,
    noQueryParameters,
    jsonBody(episodeDocumentSchema, episodeDocumentError),
    async (c) => {
      const { id } = c.req.valid("param");
      const write = valid(parseEpisodePatch(c.req.valid("json").data, "/data", Date.now(), id));
      const result = await writeOne(c, { op: "update", ...write });
      if (result.kind === "merged") return respond(c, dataDocument(toEpisodeResource(result.episode)));
      if (result.kind === "not-found") throw episodeNotFound();
      throw ApiError.from(failedWrite(result));
    },
  )

  // Forget a state, keeping a tombstone for the feed.
  .delete("/:id", jsonApi, idParam, noQueryParameters, async (c) => {
    const result = await writeOne(c, { op: "remove", id: c.req.valid("param").id });
    if (result.kind !== "removed") throw episodeNotFound();
    return c.body(null, 204);
  });

/** The error of a write that reached the database and did not succeed: inline in bulk at `pointer`. */
function failedWrite(result: EpisodeWriteResult, pointer?: string): ErrorObject {
  switch (result.kind) {
    case "feed-mismatch":
      return episodeFeedMismatch(feedPointer(pointerTo(pointer ?? "", "data")), result.feedGuid);
    case "limit":
      return episodeLimitReached(pointer);
    case "storage":
      return storageLimitReached(pointer);
    case "media-url-required":
      return mediaUrlRequired(pointerTo(pointer ?? "", "data"));
    default:
      return episodeNotFoundAt(pointer ?? "");
  }
}

/** Episode operations in `POST /v1/operations` (docs/API.md §13): validated as POST, PATCH and DELETE. */
export const episodeOperations: OperationKind<EpisodeOperation> = {
  type: EPISODE_TYPE,
  parse(op, operation, pointer, ref) {
    const data = pointerTo(pointer, "data");
    switch (op) {
      case "add": {
        const episode = parseEpisodeResource(operation.data, data, Date.now());
        return episode.ok ? { ok: true, value: { op, ...episode.value } } : episode;
      }
      case "update": {
        const write = parseEpisodePatch(operation.data, data, Date.now());
        return write.ok ? { ok: true, value: { op, ...write.value } } : write;
      }
      case "remove":
        return { ok: true, value: { op, id: (ref as ResourceRef).id } };
    }
  },
  idOf: (operation) => operation.id,
  writer(context) {
    const plan = episodeWriter(context, { sets: true });
    return (operation, pointer) => {
      const read = plan(operation);
      return (): AtomicResult => {
        const result = read();
        if (result.kind === "created" || result.kind === "merged") return { data: toEpisodeResource(result.episode) };
        if (result.kind === "removed") return {};
        return { errors: [failedWrite(result, pointer)] };
      };
    };
  },
};
