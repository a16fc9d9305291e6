import { type Json, responseRef } from "../openapi/components";
import { SHARD_CONFIG_PATH } from "../shards";

/** OpenAPI: what a worker reports about itself (routes/status.ts). */
export const statusPaths: Record<string, Json> = {
  [SHARD_CONFIG_PATH]: {
    get: {
      operationId: "shardConfigVersion",
      tags: ["Operations"],
      summary: "The version of the routing settings this worker runs with",
      description:
        "A digest (16 hex digits) of `SHARD_MAP` and `SHARD_FROZEN` as this worker read them: `npm run shards:move` waits until it reports each new setting. Nothing secret; never cached. No authentication.",
      security: [],
      responses: {
        "200": {
          description: "The version.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: { shardConfigVersion: { type: "string", pattern: "^[0-9a-f]{16}$" } },
                required: ["shardConfigVersion"],
              },
              example: { shardConfigVersion: "3f2a9c0d1e4b5a67" },
            },
          },
        },
        "405": responseRef("MethodNotAllowed"),
      },
    },
  },
};
