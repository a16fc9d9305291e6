#!/usr/bin/env node
// Per-branch Preview of the Worker (Cloudflare Worker Previews, `wrangler preview`), backed by the preview
// D1 database, never the production one.
//
//   npm run preview                      migrate the preview database, then create/update this branch's Preview
//   npm run preview -- --branch <name>   the same for another branch name (CI checkouts have no current branch)
//   npm run preview -- --delete          delete this branch's Preview (the preview database is shared and kept)
//
// The Preview name is a DNS-safe slug of the branch: lowercase a-z, 0-9 and "-", at most 40 characters.
// Optional: PREVIEW_AUTH_JWT_SECRET in the environment is uploaded as the Preview's AUTH_JWT_SECRET; without
// it the Preview gets the secrets of the Preview base config (`wrangler preview base-config secret put`).
// In GitHub Actions the Preview URL is written to $GITHUB_OUTPUT (url=, name=) and the job summary.
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { configProblems } from "./cloudflare-config.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");

/** "feature/Login_page" -> "feature-login-page"; at most 40 characters so "<slug>-<worker>" fits a DNS label. */
export function previewSlug(branch) {
  return branch
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
}

function currentBranch() {
  const fromEnv = process.env.PREVIEW_BRANCH || process.env.GITHUB_HEAD_REF || process.env.GITHUB_REF_NAME;
  if (fromEnv) return fromEnv;
  const git = spawnSync("git", ["branch", "--show-current"], { cwd: ROOT, encoding: "utf8" });
  return git.status === 0 ? git.stdout.trim() : "";
}

function wrangler(args, env = {}) {
  console.log(`$ wrangler ${args.join(" ")}`);
  const run = spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, ...env },
  });
  if (run.status !== 0) {
    console.error(`wrangler ${args[0]} failed (exit ${run.status ?? run.signal}).`);
    process.exit(run.status || 1);
  }
}

function parseArgs(argv) {
  const options = { delete: false, branch: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--delete") options.delete = true;
    else if (argv[i] === "--branch") options.branch = argv[++i];
    else {
      console.error("usage: npm run preview -- [--branch <name>] [--delete]");
      process.exit(2);
    }
  }
  return options;
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  const branch = options.branch ?? currentBranch();
  const name = previewSlug(branch ?? "");
  if (!name) {
    console.error("No branch name: run on a branch or pass --branch <name>.");
    process.exit(2);
  }
  if (options.delete) {
    wrangler(["preview", "delete", "--name", name, "--skip-confirmation"]);
    return;
  }

  const problems = configProblems("preview");
  if (problems.length > 0) {
    for (const problem of problems) console.error(`wrangler.toml not ready for previews: ${problem}`);
    console.error('See docs/README-ops.md, "Deploy to Cloudflare".');
    process.exit(1);
  }

  // Schema first, code second: the Preview's code may read columns a new migration adds.
  wrangler(["d1", "migrations", "apply", "DB", "--remote", "--preview"]);

  const temp = mkdtempSync(join(tmpdir(), "preview-"));
  try {
    const outputFile = join(temp, "wrangler-output.ndjson");
    const args = ["preview", "--name", name, "--message", `${branch} ${process.env.GITHUB_SHA ?? ""}`.trim()];
    if (process.env.PREVIEW_AUTH_JWT_SECRET) {
      const secretsFile = join(temp, "secrets.json");
      writeFileSync(secretsFile, JSON.stringify({ AUTH_JWT_SECRET: process.env.PREVIEW_AUTH_JWT_SECRET }), {
        mode: 0o600,
      });
      args.push("--secrets-file", secretsFile);
    }
    wrangler(args, { WRANGLER_OUTPUT_FILE_PATH: outputFile });
    report(name, outputFile);
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** Reads the Preview URL from wrangler's output file and hands it to GitHub Actions when running there. */
function report(name, outputFile) {
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
  if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, `name=${name}\nurl=${url}\n`);
  if (process.env.GITHUB_STEP_SUMMARY) {
    appendFileSync(
      process.env.GITHUB_STEP_SUMMARY,
      `### Preview \`${name}\`\n\n- Preview URL (latest deployment): ${url || "not reported"}\n` +
        `- This deployment: ${deploymentUrl || "not reported"}\n- Database: the preview D1 database (migrated)\n`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
