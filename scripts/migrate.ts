// Applies the migrations in drizzle/ to every D1 database the bucket map of an environment names
// (docs/sharding.md): DB alone without a map, every shard with one; and to the other databases the
// environment declares (spare ones that bucket moves fill), so that every database has the same schema.
//
//   npm run db:migrate:local                       the top-level configuration, local state of `wrangler dev`
//   npm run db:migrate:local -- --env shards       every shard of [env.shards]
//   npm run db:migrate:remote [-- --env NAME]      the Cloudflare databases
//   ... -- --database NAME                         also a database named on the command line
//   ... -- --persist-to DIR                        local state kept in DIR (as `wrangler dev --persist-to`)
import { parseArgs } from "node:util";
import { fail } from "./command-line";
import {
  DEFAULT_CONFIG,
  declaredDatabases,
  localStateDir,
  mappedDatabases,
  type Target,
  targetFlags,
  wrangler,
} from "./shards/wrangler";

const { values } = parseArgs({
  options: {
    local: { type: "boolean", default: false },
    remote: { type: "boolean", default: false },
    env: { type: "string" },
    config: { type: "string", default: DEFAULT_CONFIG },
    "persist-to": { type: "string" },
    database: { type: "string", multiple: true, default: [] },
  },
});
if (values.local === values.remote) {
  console.error("usage: tsx scripts/migrate.ts --local|--remote [--env NAME] [--database BINDING ...]");
  process.exit(2);
}

const target: Target = {
  config: values.config,
  env: values.env,
  remote: values.remote,
  persistTo: values.remote ? values["persist-to"] : localStateDir(values["persist-to"]),
};
const databases = [...new Set([...mappedDatabases(target), ...declaredDatabases(target), ...values.database])];
try {
  for (const database of databases) {
    console.log(`== ${database}${target.env ? ` (env ${target.env})` : ""}, ${target.remote ? "remote" : "local"}`);
    wrangler(["d1", "migrations", "apply", database, ...targetFlags(target)]);
  }
} catch (err) {
  // wrangler's failure (not logged in, say) in its own words, one line: never a stack trace.
  fail("db:migrate", err instanceof Error ? err.message : String(err), 1);
}
