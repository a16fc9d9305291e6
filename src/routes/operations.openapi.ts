import { ATOMIC_EXT_URI, LINK_METHOD_EXT_PATH } from "../jsonapi";
import { MAX_BODY_BYTES, MAX_OPERATIONS } from "../limits";
import {
  ATOMIC,
  bodyTooLarge,
  COMMON_BAD_REQUEST,
  commonBadRequestExamples,
  errorContent,
  example,
  exampleErrors,
  FEEDS,
  type Json,
  jsonApiContent,
  MOVED_FEED_URL,
  malformedJson,
  media415,
  notAcceptableExample,
  OPERATIONS,
  operationError,
  problem,
  schemaRef,
  stored,
  successHeaders,
  unsupportedMediaType,
  v1Headers,
  v1Parameters,
  v1Responses,
} from "../openapi/components";
import {
  alreadySubscribed,
  subscriptionLimitReached,
  subscriptionNotFoundAt,
  toSubscriptionResource,
} from "../resources/subscription";

const bulkRequestExample = {
  [OPERATIONS]: [
    { op: "add", data: { type: "subscription", id: FEEDS[1].guid, attributes: { feedUrl: FEEDS[1].feedUrl } } },
    { op: "add", data: { type: "subscription", id: FEEDS[0].guid, attributes: { feedUrl: FEEDS[0].feedUrl } } },
    {
      op: "add",
      data: {
        type: "subscription",
        id: FEEDS[2].guid,
        attributes: { feedUrl: "https://podcasts.example.org:night-sky.xml" },
      },
    },
  ],
};

const bulkSyncRequestExample = {
  [OPERATIONS]: [
    { op: "update", data: { type: "subscription", id: FEEDS[1].guid, attributes: { feedUrl: MOVED_FEED_URL } } },
    { op: "remove", ref: { type: "subscription", id: FEEDS[0].guid } },
    { op: "remove", ref: { type: "subscription", id: FEEDS[2].guid } },
  ],
};

const bulkJsonApi = { version: "1.1", ext: [ATOMIC_EXT_URI, `https://api.example.com${LINK_METHOD_EXT_PATH}`] };

const bulkResultExample = {
  jsonapi: bulkJsonApi,
  "atomic:results": [
    { data: toSubscriptionResource(stored(1), "self") },
    { errors: [alreadySubscribed(`/${OPERATIONS}/1`, FEEDS[0])] },
    { errors: [operationError(bulkRequestExample[OPERATIONS][2].data, 2)] },
  ],
  meta: { succeeded: 1, failed: 2 },
};

const bulkSyncResultExample = {
  jsonapi: bulkJsonApi,
  "atomic:results": [
    { data: toSubscriptionResource({ ...stored(1), feedUrl: MOVED_FEED_URL }, "self") },
    {},
    { errors: [subscriptionNotFoundAt(`/${OPERATIONS}/2`)] },
  ],
  meta: { succeeded: 2, failed: 1 },
};

const bulkLimitExample = {
  jsonapi: bulkJsonApi,
  "atomic:results": [{ errors: [subscriptionLimitReached(`/${OPERATIONS}/0`)] }],
  meta: { succeeded: 0, failed: 1 },
};

/** OpenAPI: Bulk operations (routes/operations.ts). */
export const operationPaths: Record<string, Json> = {
  "/v1/operations": {
    post: {
      operationId: "bulkOperations",
      tags: ["Bulk operations"],
      summary: "Add, move and remove many subscriptions at once",
      description: `JSON:API Atomic Operations, with one difference: operations are independent. They are processed in order, each succeeds or fails on its own, and the answer is 200 with one element of \`atomic:results\` per operation (\`data\`, \`{}\` for a remove, or \`errors\`) and a \`meta\` summary. \`add\` subscribes (as POST), \`update\` moves a feed (as PATCH, \`feedUrl\` required), \`remove\` unsubscribes by \`ref\` (as DELETE). Order matters: add X then remove X leaves X unsubscribed; remove X then add X revives it. Send and accept \`${ATOMIC}\`; add this server's link-method extension URI (\`<base>${LINK_METHOD_EXT_PATH}\`) to the \`ext\` of \`Accept\` and the response's \`ext\` names both, space-separated. Request-level problems (body not an object, no or empty \`${OPERATIONS}\`, more than ${MAX_OPERATIONS} operations) answer with a top-level \`errors\` document instead. All valid operations are written in one database transaction: on 503 nothing was written, and retrying is safe.`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: jsonApiContent(
          schemaRef("OperationsDocument"),
          {
            bulk: example("Three adds", bulkRequestExample),
            sync: example("A move and two removes", bulkSyncRequestExample),
          },
          ATOMIC,
        ),
      },
      responses: {
        "200": {
          description:
            "One result per operation, in order. A failed operation's element holds `errors` (400 invalid operation or resource identifier, 403 `Subscription limit reached`, 404 `Subscription not found` for an update or remove of a subscription the user does not have, 409 `Already Subscribed` or type mismatch, 422 invalid `feedUrl`); the status of the response stays 200.",
          headers: successHeaders,
          content: jsonApiContent(
            schemaRef("OperationsResultDocument"),
            {
              mixed: example(
                "One added, one already subscribed, one with a feedUrl that is not http(s)",
                bulkResultExample,
                "The response to the request example.",
              ),
              sync: example(
                "A move, a remove, and a remove of a feed not subscribed",
                bulkSyncResultExample,
                "The response to the second request example.",
              ),
              limit: example("An add over the per-user limit", bulkLimitExample),
            },
            ATOMIC,
          ),
        },
        "400": {
          description: `The body is not a JSON object, or \`${OPERATIONS}\` is missing, not an array, or empty. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent(
            {
              ...commonBadRequestExamples,
              empty: example(
                "No operations",
                exampleErrors(
                  problem(400, "Invalid document", `${OPERATIONS} must be a non-empty array of operation objects.`, {
                    source: { pointer: `/${OPERATIONS}` },
                  }),
                ),
              ),
              malformed: example("Body is not JSON", exampleErrors(malformedJson)),
            },
            [ATOMIC],
          ),
        },
        "413": {
          description: `More than ${MAX_OPERATIONS} operations, or a body over ${MAX_BODY_BYTES / 1024 / 1024} MiB.`,
          headers: v1Headers,
          content: errorContent(
            {
              tooMany: example(
                "Too many operations",
                exampleErrors(
                  problem(
                    413,
                    "Too many operations",
                    `A request may carry at most ${MAX_OPERATIONS} operations; split it into several requests.`,
                    { source: { pointer: `/${OPERATIONS}` }, meta: { maxOperations: MAX_OPERATIONS } },
                  ),
                ),
              ),
              tooLarge: example("Body too large", exampleErrors(bodyTooLarge)),
            },
            [ATOMIC],
          ),
        },
        "415": unsupportedMediaType(ATOMIC, {
          plain: example(
            "Without the atomic extension",
            media415(`This endpoint takes the Atomic Operations extension: send ${ATOMIC}.`),
          ),
        }),
        ...v1Responses,
        "406": {
          description:
            "As on every endpoint, and also when `Accept` lists the JSON:API type but no instance of it allows the atomic extension and there is no wildcard.",
          headers: v1Headers,
          content: errorContent({
            noAtomic: example(
              "Accept without the atomic extension",
              exampleErrors(
                problem(406, "Not acceptable", `Accept ${ATOMIC} to use this endpoint.`, {
                  source: { header: "Accept" },
                }),
              ),
            ),
            charset: notAcceptableExample,
          }),
        },
      },
    },
  },
};
