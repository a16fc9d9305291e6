#!/usr/bin/env node
// Checks wrangler.toml before a production deploy touches Cloudflare: the D1 id must be real (not the
// placeholder zeros). Also warns (without stopping) about settings production should have. Previews need no
// database check: scripts/preview.mjs creates each branch's own database and renders the branch's config
// with its id, so a Preview never binds the production database.
// Usage: node scripts/cloudflare-config.mjs <production|preview>   (exit 1 with the reasons when not ready)
import { fileURLToPath } from "node:url";
import { unstable_readConfig } from "wrangler";

const PLACEHOLDER = /^0{8}-0{4}-0{4}-0{4}-0{12}$/;
const CONFIG_PATH = fileURLToPath(new URL("../wrangler.toml", import.meta.url));

/** Returns the problems that stop a deployment of `target` ("production" or "preview"); empty when ready. */
export function configProblems(target, configPath = CONFIG_PATH) {
  if (target !== "production" && target !== "preview") {
    throw new Error(`unknown target ${target}: use production or preview`);
  }
  if (target === "preview") return [];
  const config = unstable_readConfig({ config: configPath });
  const db = (config.d1_databases ?? []).find((d) => d.binding === "DB");
  if (!db) return ['wrangler.toml has no [[d1_databases]] entry with binding = "DB".'];
  if (typeof db.database_id !== "string" || db.database_id === "" || PLACEHOLDER.test(db.database_id)) {
    return [
      "d1_databases.database_id is still the placeholder: run `npx wrangler d1 create podcast-subscriptions` and put the id in wrangler.toml.",
    ];
  }
  return [];
}

/** Returns what a deployment of `target` should fix but may go without; empty when nothing. */
export function configWarnings(target, configPath = CONFIG_PATH) {
  if (target !== "production") return [];
  const config = unstable_readConfig({ config: configPath });
  const publicBaseUrl = config.vars?.PUBLIC_BASE_URL;
  if (typeof publicBaseUrl === "string" && publicBaseUrl.trim() !== "") return [];
  return [
    "vars.PUBLIC_BASE_URL is not set: the link-method extension URI then comes from each request's Host header, so those responses are never cacheable by shared caches. Set it to the API's public origin (e.g. https://api.example.com).",
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const target = process.argv[2];
  if (target !== "production" && target !== "preview") {
    console.error("usage: node scripts/cloudflare-config.mjs <production|preview>");
    process.exit(2);
  }
  for (const warning of configWarnings(target)) console.error(`warning: wrangler.toml for ${target}: ${warning}`);
  const problems = configProblems(target);
  for (const problem of problems) console.error(`wrangler.toml not ready for ${target}: ${problem}`);
  if (problems.length > 0) {
    console.error('See docs/README-ops.md, "Deploy to Cloudflare".');
    process.exit(1);
  }
  console.log(`wrangler.toml is ready for ${target}.`);
}
