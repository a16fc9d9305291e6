import { LINK_METHOD_EXT_PATH } from "../jsonapi";
import { headerRef, type Json, responseRef } from "../openapi/components";

/** OpenAPI: The link-method extension's documentation (routes/extensions.ts). */
export const extensionPaths: Record<string, Json> = {
  [LINK_METHOD_EXT_PATH]: {
    get: {
      operationId: "linkMethodExtension",
      tags: ["Extensions"],
      summary: "The link-method extension",
      description:
        "The URI of this server's link-method extension dereferences here: a short plain-text description of the `method` member of link objects. No authentication.",
      security: [],
      responses: {
        "200": {
          description: "The extension's description.",
          headers: { "X-Request-Id": headerRef("X-Request-Id") },
          content: {
            "text/plain": {
              schema: { type: "string" },
              example: `JSON:API extension "link-method"\nURI: https://api.example.com${LINK_METHOD_EXT_PATH}\n\nThis extension adds one member to JSON:API link objects:\n\n  method  (string) The HTTP method to use when following the link. Allowed value: "DELETE".\n`,
            },
          },
        },
        "405": responseRef("MethodNotAllowed"),
      },
    },
  },
};
