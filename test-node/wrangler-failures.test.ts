import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { wranglerCommand, wranglerMessage } from "../scripts/wrangler-message.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
/** A home without a wrangler login, so that every remote command fails as on a machine where nobody logged in. */
const HOME = mkdtempSync(join(tmpdir(), "wrangler-not-logged-in-"));
afterAll(() => rmSync(HOME, { recursive: true, force: true }));

/** Runs a script as CI does (CI=true, stdin closed), logged out; its status and what it wrote to stderr. */
function script(name: string, args: string[]): Promise<{ status: number | null; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CI: "true",
    HOME,
    XDG_CONFIG_HOME: join(HOME, ".config"),
    WRANGLER_SEND_METRICS: "false",
  };
  delete env.CLOUDFLARE_API_TOKEN;
  delete env.CLOUDFLARE_ACCOUNT_ID;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX, join(ROOT, "scripts", `${name}.ts`), ...args], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (data) => {
      stderr += data;
    });
    child.on("close", (status) => resolve({ status, stderr }));
  });
}

/** What wrangler 4 prints when nobody is logged in, colours and all (captured from `d1 migrations apply --remote`). */
const NOT_LOGGED_IN =
  "\u001b[31m✘ \u001b[41;31m[\u001b[41;97mERROR\u001b[41;31m]\u001b[0m \u001b[1mIn a non-interactive environment, " +
  "it's necessary to set a CLOUDFLARE_API_TOKEN environment variable for wrangler to work.\u001b[0m\n\n  \n" +
  "  To continue without logging in, rerun this command with `--temporary`.\n\n\n" +
  '🪵  Logs were written to "/root/.config/.wrangler/logs/wrangler.log"\n';

describe("wrangler's failure, told in one line", () => {
  it("is wrangler's error line without colours, banner or log path; the API's error code comes along", () => {
    expect(wranglerMessage("\n ⛅️ wrangler 4\n───\nResource location: remote \n\n", NOT_LOGGED_IN)).toBe(
      "In a non-interactive environment, it's necessary to set a CLOUDFLARE_API_TOKEN environment variable for wrangler to work.",
    );
    const apiError =
      "✘ [ERROR] A request to the Cloudflare API (/accounts/x/d1/database) failed.\n\n  Authentication error [code: 10000]\n";
    expect(wranglerMessage("", apiError)).toBe(
      "A request to the Cloudflare API (/accounts/x/d1/database) failed. Authentication error [code: 10000]",
    );
    expect(wranglerMessage("", "something broke\n")).toBe("something broke");
    expect(wranglerCommand(["d1", "execute", "DB", "--remote", "--command", "SELECT 1"])).toBe(
      "wrangler d1 execute DB",
    );
  });

  const cases: [string, string[], RegExp][] = [
    ["migrate", ["--remote"], /^db:migrate: wrangler d1 migrations apply DB failed: In a non-interactive environment/],
    [
      "backup",
      ["--remote", "--out", join(HOME, "backup")],
      /^backup: wrangler d1 export DB failed: In a non-interactive/,
    ],
    ["admin", ["usage", "--remote"], /^admin: DB \(remote\): In a non-interactive environment/],
    [
      "shards-move",
      ["--buckets", "0-1", "--from", "DB", "--to", "DB_1", "--env", "shards", "--remote", "--no-worker"],
      /^shards:move: wrangler d1 migrations apply DB_1 failed: In a non-interactive environment/,
    ],
  ];
  it.each(cases)(
    "scripts/%s.ts, not logged in: exit 1 and one line on stderr, no stack trace",
    async (name, args, line) => {
      const { status, stderr } = await script(name, args);
      expect(status, stderr).toBe(1);
      expect(stderr.trim().split("\n"), stderr).toEqual([expect.stringMatching(line)]);
      expect(stderr).toContain("CLOUDFLARE_API_TOKEN");
    },
  );

  it("shards:move from a database without tables says which command to run first", async () => {
    const state = join(HOME, "empty-state");
    const args = ["--buckets", "0-1", "--from", "DB", "--to", "DB_1", "--env", "shards", "--persist-to", state];
    const { status, stderr } = await script("shards-move", [...args, "--no-worker"]);
    expect(status, stderr).toBe(1);
    expect(stderr.trim().split("\n").at(-1)).toBe(
      `shards:move: DB has no table subscriptions: apply the migrations to it first (npm run db:migrate:local -- --env shards --persist-to ${state}), then move`,
    );
  });
});
