import {
  COMMON_BAD_REQUEST,
  commonBadRequestExamples,
  errorContent,
  type Json,
  successHeaders,
  v1Headers,
  v1Parameters,
  v1Responses,
} from "../openapi/components";

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
        "400": { description: COMMON_BAD_REQUEST, headers: v1Headers, content: errorContent(commonBadRequestExamples) },
        ...v1Responses,
      },
    },
  },
};
