import { MAX_APP_PASSWORDS } from "../db/app-passwords";
import {
  bodyTooLargeResponse,
  COMMON_BAD_REQUEST,
  commonBadRequestExamples,
  errorContent,
  headerRef,
  JSONAPI,
  type Json,
  successHeaders,
  v1Headers,
  v1Responses,
} from "../openapi/components";
import { APP_PASSWORD_TYPE, MAX_LABEL_CHARACTERS } from "../resources/app-password";

/** OpenAPI: app passwords (routes/app-passwords.ts), what gpodder.net clients sign in with (docs/API.md §14). */

const appPassword: Json = {
  type: "object",
  required: ["type", "id", "attributes", "links"],
  properties: {
    type: { const: APP_PASSWORD_TYPE },
    id: { type: "string", format: "uuid" },
    attributes: {
      type: "object",
      required: ["label", "username", "createdAt", "lastUsedAt"],
      properties: {
        label: { type: "string", minLength: 1, maxLength: MAX_LABEL_CHARACTERS },
        username: { type: "string", pattern: "^[a-z0-9][a-z0-9._-]{0,63}$" },
        password: {
          type: "string",
          pattern: "^[a-km-np-z2-9]{5}(-[a-km-np-z2-9]{5}){5}$",
          description: "Only in the answer to the POST that minted it.",
        },
        createdAt: { type: "string", format: "date-time" },
        lastUsedAt: { type: ["string", "null"], format: "date-time" },
      },
    },
    links: { type: "object", properties: { self: { type: "string" } } },
  },
};

const document = (data: Json): Json => ({
  [JSONAPI]: { schema: { type: "object", required: ["data"], properties: { data } } },
});

const notFound = {
  description: "Not one of the user's app passwords.",
  headers: v1Headers,
  content: errorContent({}),
};
const badRequest = {
  description: COMMON_BAD_REQUEST,
  headers: v1Headers,
  content: errorContent(commonBadRequestExamples),
};
/** Ids are UUIDs the server chose; anything that is not one of the user's answers 404. */
const idParameter = { name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } };

export const appPasswordPaths: Record<string, Json> = {
  "/v1/app-passwords": {
    post: {
      operationId: "createAppPassword",
      tags: ["App passwords"],
      summary: "Mint an app password",
      description: `Mints a password for an app that speaks the gpodder.net API (gPodder, AntennaPod, Kasts). The answer holds \`password\` (150 random bits, six groups of five lowercase letters and digits without l, o, 0 and 1, joined by \`-\`: typeable from another screen): it is shown this once, only a hash is stored. \`username\` is the user's gpodder username, the same for every app password. At most ${MAX_APP_PASSWORDS} per user. A \`data.id\` answers 403 (the server chooses ids).`,
      requestBody: {
        required: true,
        content: document({
          type: "object",
          required: ["type", "attributes"],
          properties: {
            type: { const: APP_PASSWORD_TYPE },
            attributes: {
              type: "object",
              required: ["label"],
              properties: { label: { type: "string", minLength: 1, maxLength: MAX_LABEL_CHARACTERS } },
            },
          },
        }),
      },
      responses: {
        "201": {
          description: "Minted; `Location` names it.",
          headers: { ...successHeaders, Location: headerRef("Location") },
          content: document(appPassword),
        },
        "400": {
          description: `Not a JSON:API document. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent(commonBadRequestExamples),
        },
        "403": {
          description: "A client-chosen id, or `App password limit reached` (`meta.maxAppPasswords`).",
          headers: v1Headers,
          content: errorContent({}),
        },
        "409": { description: "`type` is not `app-password`.", headers: v1Headers, content: errorContent({}) },
        "413": bodyTooLargeResponse,
        "415": { description: "Not sent as the JSON:API media type.", headers: v1Headers, content: errorContent({}) },
        "422": { description: "A missing or bad `label`.", headers: v1Headers, content: errorContent({}) },
        ...v1Responses,
      },
    },
    get: {
      operationId: "listAppPasswords",
      tags: ["App passwords"],
      summary: "List app passwords",
      description:
        "The user's app passwords, oldest first, never with a `password`. `lastUsedAt` is recorded at most once a minute.",
      responses: {
        "200": {
          description: "The app passwords.",
          headers: successHeaders,
          content: {
            [JSONAPI]: { schema: { type: "object", properties: { data: { type: "array", items: appPassword } } } },
          },
        },
        "400": badRequest,
        ...v1Responses,
      },
    },
  },
  "/v1/app-passwords/{id}": {
    get: {
      operationId: "getAppPassword",
      tags: ["App passwords"],
      summary: "Get one app password",
      parameters: [idParameter],
      responses: {
        "200": {
          description: "The app password (no `password`).",
          headers: successHeaders,
          content: document(appPassword),
        },
        "400": badRequest,
        "404": notFound,
        ...v1Responses,
      },
    },
    delete: {
      operationId: "deleteAppPassword",
      tags: ["App passwords"],
      summary: "Revoke an app password",
      description:
        "The password, and every gpodder session opened with it, stop working (within 60 seconds everywhere).",
      parameters: [idParameter],
      responses: {
        "204": { description: "Revoked.", headers: successHeaders },
        "400": badRequest,
        "404": notFound,
        ...v1Responses,
      },
    },
  },
};
