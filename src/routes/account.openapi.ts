import { errorDocument } from "../jsonapi";
import { errorContent, type Json, successHeaders, v1Headers, v1Parameters, v1Responses } from "../openapi/components";
import { expiredSyncToken } from "../pagination";

/** OpenAPI: erasing an account (routes/account.ts). */
export const accountPaths: Record<string, Json> = {
  "/v1/account": {
    delete: {
      operationId: "eraseAccount",
      tags: ["Account"],
      summary: "Erase everything stored for the user",
      description:
        'Erases, in one database transaction, every subscription (tombstones included), every episode state (tombstones included), the app passwords, gpodder sessions and devices of the token\'s user. Only bare counters without content stay: the change numbers move on, so a device that syncs afterwards with a token from before gets `410 Sync token expired` (never an empty page it would take for "nothing changed") and syncs again from `filter[since]=0`, which answers the empty feeds. No body, no query parameters. Writing again afterwards starts a new account under the same user.',
      parameters: v1Parameters,
      responses: {
        "204": { description: "Erased. No body.", headers: successHeaders },
        "400": {
          description: "A query parameter JSON:API reserves was sent.",
          headers: v1Headers,
        },
        ...v1Responses,
      },
    },
  },
};

/** The 410 a change feed answers to a token from before a purge (docs/API.md §15), for the feeds' descriptions. */
export const syncTokenExpiredResponse: Json = {
  description:
    "The token is older than a purge of deleted items it had not seen (tombstones are purged after 180 days, to make room at a quota or the storage budget, and when the account is erased): sync again from `filter[since]=0` and replace the local state with the result.",
  headers: v1Headers,
  content: errorContent({
    expired: { summary: "Sync token expired", value: errorDocument(expiredSyncToken().errors) },
  }),
};
