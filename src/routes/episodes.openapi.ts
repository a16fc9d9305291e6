import { MAX_STORED_EPISODES } from "../db/episodes";
import { dataDocument, errorDocument } from "../jsonapi";
import {
  bodyTooLargeResponse,
  COMMON_BAD_REQUEST,
  commonBadRequestExamples,
  EXAMPLE_TIME,
  errorContent,
  example,
  exampleErrors,
  FEEDS,
  headerRef,
  JSONAPI,
  type Json,
  jsonApiContent,
  malformedJson,
  media415,
  pageError,
  parameterRef,
  parameters,
  responseRef,
  schemaRef,
  successHeaders,
  syncTokenExpiredResponse,
  unsupportedMediaType,
  v1Headers,
  v1Parameters,
  v1Responses,
} from "../openapi/components";
import { changeFeedLinks, invalidSyncToken } from "../pagination";
import {
  episodeFeedMismatch,
  episodeLimitReached,
  parseEpisodePatch,
  parseEpisodeResource,
  toEpisodeChangeResource,
  toEpisodeResource,
} from "../resources/episode";
import { idMismatch, invalidGuid, storageLimitReached } from "../resources/resource-object";

/** The example episode of docs/API.md §13: item guid `ABC-123` of the feed 9b024349-... */
const EPISODE = {
  id: "4ceaf82a-1820-5c0e-893a-a95e7bcfde33",
  feedGuid: "9b024349-ccf0-5f69-a609-6b82873eab3c",
  mediaUrl: "https://cdn.example.com/abc-123.mp3",
  itemGuid: "ABC-123",
};
const relationships = { subscription: { data: { type: "subscription", id: EPISODE.feedGuid } } };

const paused = {
  ...EPISODE,
  position: 754,
  duration: 3600,
  played: false,
  positionChangedAt: EXAMPLE_TIME,
  playedChangedAt: null,
};
const finished = {
  ...paused,
  position: 3600,
  played: true,
  positionChangedAt: EXAMPLE_TIME + 3_600_000,
  playedChangedAt: EXAMPLE_TIME + 3_600_000,
};

const createExample = {
  data: {
    type: "episode",
    id: EPISODE.id,
    attributes: {
      mediaUrl: EPISODE.mediaUrl,
      itemGuid: EPISODE.itemGuid,
      position: 754,
      duration: 3600,
      changedAt: "2026-11-21T23:44:28.123+01:00",
    },
    relationships,
  },
};
const playedExample = {
  data: {
    type: "episode",
    id: EPISODE.id,
    attributes: { played: true, position: 3600, changedAt: "2026-11-21T23:44:28.123Z" },
  },
};

/** The error a body answers, from the route's own validator (so the example cannot drift from the code). */
function episodeBodyError(body: { data?: unknown }, patch = false) {
  const result = patch
    ? parseEpisodePatch(body.data, "/data", EXAMPLE_TIME, EPISODE.id)
    : parseEpisodeResource(body.data, "/data", EXAMPLE_TIME);
  if (result.ok) throw new Error(`example body ${JSON.stringify(body)} is valid`);
  return result.error;
}

const oneExample = dataDocument(toEpisodeResource(paused));
const feedExample = dataDocument(
  [
    toEpisodeChangeResource({ ...finished, deletedAt: null, changeSeq: 41 }),
    toEpisodeChangeResource({
      id: "907fd5d2-b54d-5742-9738-d0e114bbc393",
      feedGuid: EPISODE.feedGuid,
      deletedAt: EXAMPLE_TIME,
      changeSeq: 42,
    }),
  ],
  { links: changeFeedLinks("/v1/episodes", { since: 40, size: 2 }, 42, true), meta: { syncToken: "42" } },
);
const caughtUpExample = dataDocument([], {
  links: changeFeedLinks("/v1/episodes", { since: 57, size: 25 }, 57, false),
  meta: { syncToken: "57" },
});

const episodeParameter = {
  name: "id",
  in: "path",
  required: true,
  description:
    "The episode's UUID (8-4-4-4-12 hex syntax, any version, any case). Anything else answers 400 `Invalid GUID in request`.",
  schema: parameters.guid.schema,
  example: EPISODE.id,
};

const notAUuid = example("The path id is not a UUID", errorDocument(invalidGuid().errors));
const badIdOrQuery = {
  description: `The id is not a UUID. ${COMMON_BAD_REQUEST}`,
  headers: v1Headers,
  content: errorContent({ invalidGuid: notAUuid, ...commonBadRequestExamples }),
};
const feedMismatch = example(
  "The state belongs to another feed",
  exampleErrors(episodeFeedMismatch("/data/relationships/subscription/data/id", FEEDS[0].guid)),
);
const jsonApi415 = unsupportedMediaType(JSONAPI, {
  json: example("Sent as application/json", media415(`Send the request body as ${JSONAPI}.`)),
});
const attributeErrors = errorContent({
  noMediaUrl: example(
    "mediaUrl missing on create",
    exampleErrors(
      episodeBodyError({ data: { type: "episode", id: EPISODE.id, attributes: { position: 1 }, relationships } }),
    ),
  ),
  noChangedAt: example(
    "position without changedAt",
    exampleErrors(
      episodeBodyError({
        data: {
          type: "episode",
          id: EPISODE.id,
          attributes: { mediaUrl: EPISODE.mediaUrl, position: 1 },
          relationships,
        },
      }),
    ),
  ),
  early: example(
    "changedAt before 2000",
    exampleErrors(
      episodeBodyError({
        data: {
          type: "episode",
          id: EPISODE.id,
          attributes: { mediaUrl: EPISODE.mediaUrl, played: true, changedAt: "1999-12-31T23:59:59Z" },
          relationships,
        },
      }),
    ),
  ),
});

/** OpenAPI: episode states and their change feed (routes/episodes.ts, docs/API.md §13). */
export const episodePaths: Record<string, Json> = {
  "/v1/episodes": {
    get: {
      operationId: "listEpisodeChanges",
      tags: ["Episodes"],
      summary: "The episode change feed",
      description:
        "The authenticated user's episode states changed after `filter[since]` (absent: `0`, the whole history), oldest change first, each once with its current state: live ones as the resource plus `deletedAt: null`, forgotten ones as tombstones with `deletedAt` and no links. Its own sequence of tokens, apart from the subscriptions'. Follow `links.next` until it is null, then store `meta.syncToken`. Takes `filter[since]` and `page[size]` only (`page[number]` and the other names JSON:API reserves answer 400).",
      parameters: [parameterRef("pageSize"), parameterRef("since"), parameterRef("ifNoneMatch"), ...v1Parameters],
      responses: {
        "200": {
          description: "One page of the episode change feed.",
          headers: { ...successHeaders, ETag: headerRef("ETag") },
          content: jsonApiContent(schemaRef("EpisodeChangeFeedDocument"), {
            changes: example("A finished episode and a forgotten one after token 40, more to follow", feedExample),
            caughtUp: example("Nothing changed since the token", caughtUpExample),
          }),
        },
        "304": responseRef("NotModified"),
        "410": syncTokenExpiredResponse,
        "400": {
          description: `A query parameter is invalid or not supported (\`page[number]\` included: the feed pages by \`links.next\`), or the token was never issued to the user. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
            token: example("A token this server never issued", errorDocument(invalidSyncToken().errors)),
            pageNumber: example(
              "page[number] (the feed pages by links.next)",
              exampleErrors(pageError({ "page[number]": "2", sort: "x" })),
            ),
          }),
        },
        ...v1Responses,
      },
    },
    post: {
      operationId: "saveEpisodeState",
      tags: ["Episodes"],
      summary: "Save an episode's listening state (create or merge)",
      description: `Creates the state (201) or merges into it (200, whether or not anything changed). \`position\` and \`played\` each take a change only when its \`changedAt\` is strictly later than the stored one's (a retry or a late, older upload changes nothing); \`mediaUrl\`, \`itemGuid\` and \`duration\` replace the stored ones when sent, except from a write whose \`changedAt\` is earlier than the later of the state's two change times (a late upload changes no fact). A write that changes nothing takes no change number. A forgotten state written again starts afresh (201). Send the body as \`${JSONAPI}\`. Checks run in this order: body JSON, \`data\`, \`type\` (409 when not \`episode\`), \`id\` (400), \`relationships.subscription.data\` (400), the attributes (422). At most ${MAX_STORED_EPISODES} states per user, forgotten ones included (403).`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: jsonApiContent(schemaRef("EpisodeCreateDocument"), {
          paused: example("Paused at 12:34", createExample),
        }),
      },
      responses: {
        "200": {
          description: "The state existed: as it is after the merge.",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("EpisodeDocument"), { merged: example("Merged", oneExample) }),
        },
        "201": {
          description: "A new state.",
          headers: { ...successHeaders, Location: headerRef("Location") },
          content: jsonApiContent(schemaRef("EpisodeDocument"), { created: example("Created", oneExample) }),
        },
        "400": {
          description: `The body is not JSON or not a document with \`data\`, \`id\` is missing or not a UUID, or the feed relationship is missing or malformed. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
            malformed: example("Body is not JSON", exampleErrors(malformedJson)),
            noRelationship: example(
              "No feed relationship",
              exampleErrors(
                episodeBodyError({
                  data: { type: "episode", id: EPISODE.id, attributes: { mediaUrl: EPISODE.mediaUrl } },
                }),
              ),
            ),
          }),
        },
        "403": {
          description: `The user's live episode states alone fill the quota of ${MAX_STORED_EPISODES} (forgotten ones count too, but the oldest are purged first to make room), or the state's URL text would pass the storage budget even after purging every unsubscription. The quota's error wins when both apply.`,
          headers: v1Headers,
          content: errorContent({
            limit: example("Episode limit reached", exampleErrors(episodeLimitReached())),
            storage: example("Storage limit reached", exampleErrors(storageLimitReached())),
          }),
        },
        "409": {
          description: "`data.type` is not `episode`, or the stored state belongs to another feed (nothing written).",
          headers: v1Headers,
          content: errorContent({
            typeMismatch: example(
              "Wrong resource type",
              exampleErrors(episodeBodyError({ data: { type: "subscription", id: EPISODE.id } })),
            ),
            feedMismatch,
          }),
        },
        "413": bodyTooLargeResponse,
        "415": jsonApi415,
        "422": { description: "An attribute is missing or invalid.", headers: v1Headers, content: attributeErrors },
        ...v1Responses,
      },
    },
  },
  "/v1/episodes/{id}": {
    parameters: [episodeParameter],
    get: {
      operationId: "getEpisodeState",
      tags: ["Episodes"],
      summary: "Get an episode state",
      description:
        "One episode state of the authenticated user. The id matches in any case. Takes no query parameters.",
      parameters: [parameterRef("ifNoneMatch"), ...v1Parameters],
      responses: {
        "200": {
          description: "The episode state.",
          headers: { ...successHeaders, ETag: headerRef("ETag") },
          content: jsonApiContent(schemaRef("EpisodeDocument"), { paused: example("Paused at 12:34", oneExample) }),
        },
        "304": responseRef("NotModified"),
        "400": badIdOrQuery,
        "404": responseRef("EpisodeNotFound"),
        ...v1Responses,
      },
    },
    patch: {
      operationId: "mergeEpisodeState",
      tags: ["Episodes"],
      summary: "Merge into an existing episode state",
      description: `The merge of \`POST /v1/episodes\` on an existing state; never creates one (404). \`relationships\` and \`mediaUrl\` are optional; when \`relationships\` are sent they must name the stored feed (409). Send the body as \`${JSONAPI}\`. Checks run in this order: the path id (400), body JSON, \`data\`, \`type\` (409), \`id\` (400 when missing or not a UUID, 409 at \`/data/id\` when it is not the path's), relationships (400), attributes (422).`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: jsonApiContent(schemaRef("EpisodePatchDocument"), {
          played: example("Finished: mark it played", playedExample),
        }),
      },
      responses: {
        "200": {
          description: "The state after the merge.",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("EpisodeDocument"), {
            merged: example("Played", dataDocument(toEpisodeResource(finished))),
          }),
        },
        "400": {
          description: `The path id is not a UUID, the body is not JSON or not a document with \`data\`, or \`data.id\` is missing or not a UUID. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
            invalidGuid: notAUuid,
            malformed: example("Body is not JSON", exampleErrors(malformedJson)),
          }),
        },
        "403": {
          description:
            "A new `mediaUrl` or `itemGuid` would grow the user's URL text past the storage budget even after purging every unsubscription. A merge that does not grow the text (position, played, duration, a shorter or null text) is never refused.",
          headers: v1Headers,
          content: errorContent({ storage: example("Storage limit reached", exampleErrors(storageLimitReached())) }),
        },
        "404": responseRef("EpisodeNotFound"),
        "409": {
          description:
            "`data.type` is not `episode`, `data.id` is not the path's id, or the relationship names another feed than the stored one.",
          headers: v1Headers,
          content: errorContent({
            idMismatch: example("Another id in the body", exampleErrors(idMismatch("/data/id", EPISODE.id))),
            feedMismatch,
          }),
        },
        "413": bodyTooLargeResponse,
        "415": jsonApi415,
        "422": {
          description: "An attribute is invalid.",
          headers: v1Headers,
          content: errorContent({
            position: example(
              "A negative position",
              exampleErrors(
                episodeBodyError(
                  {
                    data: {
                      type: "episode",
                      id: EPISODE.id,
                      attributes: { position: -5, changedAt: "2026-11-21T22:44:28Z" },
                    },
                  },
                  true,
                ),
              ),
            ),
          }),
        },
        ...v1Responses,
      },
    },
    delete: {
      operationId: "forgetEpisodeState",
      tags: ["Episodes"],
      summary: "Forget an episode state",
      description:
        "Forgets the state, keeping a tombstone (id, feed, when) that the episode change feed reports; writing the id again starts a fresh state. Takes no query parameters.",
      parameters: v1Parameters,
      responses: {
        "204": { description: "Forgotten.", headers: successHeaders },
        "400": badIdOrQuery,
        "404": responseRef("EpisodeNotFound"),
        ...v1Responses,
      },
    },
  },
};
