import { applyD1Migrations, env } from "cloudflare:test";
import { shardDatabases } from "./helpers";

// Storage is isolated per test file; each file starts from the migrated, empty schema, on every shard.
for (const { database } of shardDatabases()) await applyD1Migrations(database, env.TEST_MIGRATIONS);
