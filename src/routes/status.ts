import { Hono } from "hono";
import type { AppEnv } from "../env";
import { shardConfigVersion } from "../shards";

/**
 * GET /status/shard-config (SHARD_CONFIG_PATH, unauthenticated: it holds no secret): `{"shardConfigVersion": "<16 hex digits>"}`, the version of the routing settings
 * this worker runs with, never cached, so that a bucket move can tell when the worker routes by its settings.
 */
export const statusRoutes = new Hono<AppEnv>().get("/shard-config", async (c) =>
  c.json({ shardConfigVersion: await shardConfigVersion(c.env) }, 200, { "Cache-Control": "no-store" }),
);
