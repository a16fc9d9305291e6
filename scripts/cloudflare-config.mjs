#!/usr/bin/env node
// Checks wrangler.toml before a production deploy touches Cloudflare: the D1 id must be real (not the
// placeholder zeros). Previews need no such check: scripts/preview.mjs creates each branch's own database and
// renders the branch's config with its id.
// Usage: node scripts/cloudflare-config.mjs production   (exit 1 with the reasons when not ready)
import { fileURLToPath } from "node:url";
import { unstable_readConfig } from "wrangler";

const PLACEHOLDER = /^0{8}-0{4}-0{4}-0{4}-0{12}$/;
const CONFIG_PATH = fileURLToPath(new URL("../wrangler.toml", import.meta.url));

/** Returns the problems that stop a production deployment; empty when ready. */
export function configProblems() {
  const config = unstable_readConfig({ config: CONFIG_PATH });
  const db = (config.d1_databases ?? []).find((d) => d.binding === "DB");
  if (!db) return ['wrangler.toml has no [[d1_databases]] entry with binding = "DB".'];
  if (typeof db.database_id !== "string" || db.database_id === "" || PLACEHOLDER.test(db.database_id)) {
    return [
      "d1_databases.database_id is still the placeholder: run `npx wrangler d1 create podcast-subscriptions` and put the id in wrangler.toml.",
    ];
  }
  return [];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] !== "production") {
    console.error("usage: node scripts/cloudflare-config.mjs production");
    process.exit(2);
  }
  const problems = configProblems();
  for (const problem of problems) console.error(`wrangler.toml not ready for production: ${problem}`);
  if (problems.length > 0) {
    console.error('See docs/README-ops.md, "Deploy to Cloudflare".');
    process.exit(1);
  }
  console.log("wrangler.toml is ready for production.");
}
