#!/usr/bin/env node
// Per-branch Preview of the Worker (Cloudflare Worker Previews, `wrangler preview`), each with its own D1
// database, so that a branch's migration never reaches another branch's Preview, nor production.
//
//   npm run preview                      create (once) this branch's database, migrate it, then create or
//                                        update this branch's Preview bound to it
//   npm run preview -- --branch <name>   the same for another branch name (CI checkouts have no current branch)
//   npm run preview -- --delete          delete this branch's Preview, then its database
//   npm run preview -- --render [--database-id <uuid>]
//                                        only write the branch's wrangler config and print its path (no network)
//
// Names: the Preview is a DNS-safe slug of the branch (lowercase a-z, 0-9 and "-", at most 40 characters);
// its database is "<worker>-pv-<slug>" (at most 63 characters). The branch's wrangler config is rendered
// from wrangler.toml into .wrangler/preview/<slug>/wrangler.json: the same Worker and `[previews]` settings,
// with the DB binding, at the top (what `wrangler d1 migrations apply` migrates) and in `[previews]` (what
// the Preview binds), pointing at the branch's database; the production database appears nowhere in it.
// Optional: PREVIEW_AUTH_JWT_SECRET in the environment is uploaded as the Preview's AUTH_JWT_SECRET; without
// it the Preview gets the secrets of the Preview base config (`wrangler preview base-config secret put`).
// In GitHub Actions the Preview URL is written to $GITHUB_OUTPUT (url=, name=, database=) and the job summary.
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";
import { wranglerMessage } from "./wrangler-message.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CONFIG_PATH = join(ROOT, "wrangler.toml");
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const D1_NAME_MAX = 63;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PLACEHOLDER_ID = "00000000-0000-0000-0000-000000000000";

/** "feature/Login_page" -> "feature-login-page"; at most 40 characters so "<slug>-<worker>" fits a DNS label. */
export function previewSlug(branch) {
  return branch
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
}

/** The branch's D1 database: "<worker>-pv-<slug>", cut to 63 characters. */
export function previewDatabaseName(branch, workerName = readRawConfig().name) {
  return `${workerName}-pv-${previewSlug(branch)}`.slice(0, D1_NAME_MAX).replace(/-+$/, "");
}

function readRawConfig() {
  return experimental_readRawConfig({ config: CONFIG_PATH }).rawConfig;
}

/** Where the branch's rendered config goes (git-ignored, under .wrangler/). */
export function renderedConfigPath(branch) {
  return join(ROOT, ".wrangler", "preview", previewSlug(branch), "wrangler.json");
}

/**
 * The branch's wrangler config: wrangler.toml with its DB binding pointing at the branch's database, at the
 * top and in `[previews]`, and its paths made relative to where the rendered file lives.
 */
export function renderPreviewConfig(branch, databaseId, outFile = renderedConfigPath(branch)) {
  if (!UUID.test(databaseId)) throw new Error(`not a D1 database id: ${databaseId}`);
  const raw = readRawConfig();
  const production = (raw.d1_databases ?? []).find((db) => db.binding === "DB");
  if (!production) throw new Error('wrangler.toml has no [[d1_databases]] entry with binding = "DB"');
  if (databaseId === production.database_id && databaseId !== PLACEHOLDER_ID) {
    throw new Error("the branch database id is the production database id");
  }
  const fromOut = (path) => relative(resolve(outFile, ".."), resolve(ROOT, path)) || ".";
  const database_name = previewDatabaseName(branch, raw.name);
  const branchDb = { binding: "DB", database_name, database_id: databaseId };
  const { preview_database_id: _local, ...productionRest } = production;
  return {
    ...raw,
    main: fromOut(raw.main),
    ...(raw.assets ? { assets: { ...raw.assets, directory: fromOut(raw.assets.directory) } } : {}),
    d1_databases: [
      { ...productionRest, ...branchDb, migrations_dir: fromOut(production.migrations_dir ?? "migrations") },
      ...(raw.d1_databases ?? []).filter((db) => db.binding !== "DB"),
    ],
    previews: {
      ...raw.previews,
      d1_databases: [branchDb, ...(raw.previews?.d1_databases ?? []).filter((db) => db.binding !== "DB")],
    },
  };
}

/** Writes the rendered config for `branch`; answers its path. */
export function writePreviewConfig(branch, databaseId, outFile = renderedConfigPath(branch)) {
  const config = renderPreviewConfig(branch, databaseId, outFile);
  mkdirSync(resolve(outFile, ".."), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(config, null, 2)}\n`);
  return outFile;
}

function currentBranch() {
  const fromEnv = process.env.PREVIEW_BRANCH || process.env.GITHUB_HEAD_REF || process.env.GITHUB_REF_NAME;
  if (fromEnv) return fromEnv;
  const git = spawnSync("git", ["branch", "--show-current"], { cwd: ROOT, encoding: "utf8" });
  return git.status === 0 ? git.stdout.trim() : "";
}

/**
 * Runs wrangler with this Node; prints its output unless `capture`, and answers status, stdout and, when it failed,
 * wrangler's message in one line (its stderr is shown as it is only when it succeeded: warnings).
 */
function wrangler(args, { env = {}, capture = false } = {}) {
  console.log(`$ wrangler ${args.join(" ")}`);
  const run = spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    stdio: ["ignore", capture ? "pipe" : "inherit", "pipe"],
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  const status = run.status ?? 1;
  if (status === 0) process.stderr.write(run.stderr ?? "");
  const failure = status === 0 ? undefined : wranglerMessage(run.stdout ?? "", run.stderr ?? "");
  return { status, stdout: run.stdout ?? "", failure };
}

function mustSucceed({ status, failure }, what) {
  if (status !== 0) {
    console.error(`preview: ${what} failed: ${failure}`);
    process.exit(status || 1);
  }
}

/** The id of the account's D1 database called `name`, if there is one. */
function findDatabase(name) {
  const listed = wrangler(["d1", "list", "--json"], { capture: true });
  mustSucceed(listed, "wrangler d1 list");
  const json = listed.stdout.slice(listed.stdout.indexOf("["));
  return JSON.parse(json).find((db) => db.name === name)?.uuid;
}

/** Creates the branch's database unless it exists; answers its id. Running it twice changes nothing. */
function ensureDatabase(name) {
  const existing = findDatabase(name);
  if (existing) {
    console.log(`Database ${name} exists (${existing}).`);
    return existing;
  }
  mustSucceed(wrangler(["d1", "create", name]), `wrangler d1 create ${name}`);
  const created = findDatabase(name);
  if (!created) {
    console.error(`Database ${name} was created but is not listed.`);
    process.exit(1);
  }
  return created;
}

function parseArgs(argv) {
  const options = { delete: false, render: false, branch: undefined, databaseId: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--delete") options.delete = true;
    else if (argv[i] === "--render") options.render = true;
    else if (argv[i] === "--branch") options.branch = argv[++i];
    else if (argv[i] === "--database-id") options.databaseId = argv[++i];
    else {
      console.error("usage: npm run preview -- [--branch <name>] [--delete | --render [--database-id <uuid>]]");
      process.exit(2);
    }
  }
  return options;
}

function deletePreview(name, database) {
  // The Preview first, so that nothing is bound to the database when it goes. Either may already be gone.
  const preview = wrangler(["preview", "delete", "--name", name, "--skip-confirmation"]);
  if (preview.status !== 0) console.warn(`No Preview "${name}" deleted (it may not exist); going on with ${database}.`);
  if (!findDatabase(database)) {
    console.log(`No database ${database}: nothing to delete.`);
    return;
  }
  mustSucceed(wrangler(["d1", "delete", database, "--skip-confirmation"]), `wrangler d1 delete ${database}`);
}

function deploy(branch, name, database) {
  const databaseId = ensureDatabase(database);
  const config = writePreviewConfig(branch, databaseId);
  const configArg = relative(ROOT, config);
  // Schema first, code second: the Preview's code may read columns a new migration adds.
  mustSucceed(wrangler(["d1", "migrations", "apply", "DB", "--remote", "-c", configArg]), "migrations");

  const temp = mkdtempSync(join(tmpdir(), "preview-"));
  try {
    const outputFile = join(temp, "wrangler-output.ndjson");
    const args = ["preview", "-c", configArg, "--name", name];
    args.push("--message", `${branch} ${process.env.GITHUB_SHA ?? ""}`.trim());
    if (process.env.PREVIEW_AUTH_JWT_SECRET) {
      const secretsFile = join(temp, "secrets.json");
      writeFileSync(secretsFile, JSON.stringify({ AUTH_JWT_SECRET: process.env.PREVIEW_AUTH_JWT_SECRET }), {
        mode: 0o600,
      });
      args.push("--secrets-file", secretsFile);
    }
    mustSucceed(wrangler(args, { env: { WRANGLER_OUTPUT_FILE_PATH: outputFile } }), "wrangler preview");
    report(name, database, outputFile);
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  const branch = options.branch ?? currentBranch();
  const name = previewSlug(branch ?? "");
  if (!name) {
    console.error("No branch name: run on a branch or pass --branch <name>.");
    process.exit(2);
  }
  const database = previewDatabaseName(branch);
  if (options.render) {
    console.log(writePreviewConfig(branch, options.databaseId ?? PLACEHOLDER_ID));
  } else if (options.delete) {
    deletePreview(name, database);
  } else {
    deploy(branch, name, database);
  }
}

/** Reads the Preview URL from wrangler's output file and hands it to GitHub Actions when running there. */
function report(name, database, outputFile) {
  const entries = existsSync(outputFile)
    ? readFileSync(outputFile, "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line))
    : [];
  const preview = entries.findLast((entry) => entry.type === "preview");
  const url = preview?.preview_urls?.[0] ?? "";
  const deploymentUrl = preview?.deployment_urls?.[0] ?? "";
  console.log(url ? `Preview "${name}": ${url}` : `Preview "${name}" deployed (no URL reported).`);
  if (process.env.GITHUB_OUTPUT) {
    appendFileSync(process.env.GITHUB_OUTPUT, `name=${name}\nurl=${url}\ndatabase=${database}\n`);
  }
  if (process.env.GITHUB_STEP_SUMMARY) {
    appendFileSync(
      process.env.GITHUB_STEP_SUMMARY,
      `### Preview \`${name}\`\n\n- Preview URL (latest deployment): ${url || "not reported"}\n` +
        `- This deployment: ${deploymentUrl || "not reported"}\n` +
        `- Database: \`${database}\` (this branch's own, migrated)\n`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
