import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { renderClientTypes } from "../src/openapi/client-types";
import { buildOpenApiDocument } from "../src/openapi/document";

/**
 * The typed client as an app gets it: built (tsc -p client), packed (npm pack), installed into a scratch
 * app from the tarball, type-checked there by the app's own compiler run, and run against the worker
 * served by wrangler (global-setup.ts). Also: served responses type-check against the types openapi-typescript
 * generated from the document, the types the client is written against.
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const TSX = join(ROOT, "node_modules/tsx/dist/cli.mjs");
const PACKAGE = JSON.parse(readFileSync(join(ROOT, "client/package.json"), "utf8")) as {
  name: string;
  version: string;
};

function run(file: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number; output: string; stdout: string }>((done) => {
    execFile(
      file,
      args,
      { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ...env, NO_COLOR: "1" } },
      (error, stdout, stderr) =>
        done({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}`, stdout }),
    );
  });
}

/** A bearer token for `userId`, signed with the secret global-setup gave the worker. */
async function tokenFor(userId: string): Promise<string> {
  const secret = /AUTH_JWT_SECRET="([^"]+)"/.exec(readFileSync(inject("devVarsFile"), "utf8"))?.[1] as string;
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + 600 }, secret, "HS256");
}

/** The fenced block after `<!-- client-example: <name> -->` in docs/README-client.md. */
function readmeExample(name: string): string {
  const readme = readFileSync(join(ROOT, "docs/README-client.md"), "utf8");
  const match = new RegExp(`<!-- client-example: ${name} -->\\n\`\`\`ts\\n([\\s\\S]*?)\\n\`\`\``).exec(readme);
  if (!match) throw new Error(`docs/README-client.md has no "${name}" example`);
  return match[1];
}

const APP_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    lib: ["ES2022", "DOM"],
    strict: true,
    noEmit: true,
    types: ["node"],
    typeRoots: [join(ROOT, "node_modules/@types")],
  },
  include: ["*.ts"],
};

describe("the client package", () => {
  let scratch: string;
  let app: string;
  let packedFiles: string[];

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "client-package-"));
    const build = await run(process.execPath, [TSC, "-p", "client"], ROOT);
    expect(build.code, build.output).toBe(0);
    const pack = await run("npm", ["pack", "./client", "--json", "--pack-destination", scratch], ROOT);
    expect(pack.code, pack.output).toBe(0);
    const [packed] = JSON.parse(pack.stdout) as {
      filename: string;
      files: { path: string }[];
    }[];
    packedFiles = packed.files.map((file) => file.path);
    app = join(scratch, "app");
    mkdirSync(app);
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({
        name: "an-app",
        private: true,
        type: "module",
        dependencies: { [PACKAGE.name]: `file:../${packed.filename}` },
      }),
    );
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(APP_TSCONFIG));
    // The package has no dependencies: the install needs no registry.
    const install = await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"], app);
    expect(install.code, install.output).toBe(0);
  });

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("holds the built ESM and its declarations, no sources", () => {
    expect(packedFiles).toContain("package.json");
    expect(packedFiles).toContain("dist/client/src/index.js");
    expect(packedFiles).toContain("dist/client/src/index.d.ts");
    expect(packedFiles).toContain("dist/src/podcast-guid.js");
    expect(packedFiles.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
  });

  it("runs the README's two-device example, type-checked, against the worker", async () => {
    writeFileSync(join(app, "two-devices.ts"), readmeExample("two-devices"));
    const check = await run(process.execPath, [TSC, "-p", "."], app);
    expect(check.code, check.output).toBe(0);
    const example = await run(process.execPath, [TSX, "two-devices.ts"], app, {
      API_URL: inject("workerOrigin"),
      API_TOKEN: await tokenFor(`client-package-${crypto.randomUUID()}`),
    });
    expect(example.code, example.output).toBe(0);
    expect(example.output).toMatch(/^in sync at \d+:/m);
  });

  it("runs the README's listening-progress example, type-checked, against the worker", async () => {
    writeFileSync(join(app, "listening-progress.ts"), readmeExample("listening-progress"));
    const check = await run(process.execPath, [TSC, "-p", "."], app);
    expect(check.code, check.output).toBe(0);
    const example = await run(process.execPath, [TSX, "listening-progress.ts"], app, {
      API_URL: inject("workerOrigin"),
      API_TOKEN: await tokenFor(`client-episodes-${crypto.randomUUID()}`),
    });
    expect(example.code, example.output).toBe(0);
    expect(example.output).toMatch(/^resume at 754$/m);
    expect(example.output).toMatch(/^played everywhere: true$/m);
  });

  it("served responses type-check against the generated types, with excess-property checks", async () => {
    const origin = inject("workerOrigin");
    const token = await tokenFor(`client-types-${crypto.randomUUID()}`);
    const guid = crypto.randomUUID();
    const exchange = async (
      operation: string,
      method: string,
      path: string,
      body?: unknown,
      mediaType = "application/vnd.api+json",
    ) => {
      const response = await fetch(new URL(path, origin), {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: mediaType,
          ...(body === undefined ? {} : { "Content-Type": mediaType }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return {
        operation,
        status: response.status,
        mediaType: (response.headers.get("Content-Type") ?? "").replace(/; charset=.*$/, ""),
        body: await response.json(),
      };
    };
    const atomic = 'application/vnd.api+json;ext="https://jsonapi.org/ext/atomic"';
    const served = [
      await exchange("subscribe", "POST", "/v1/subscriptions", {
        data: { type: "subscription", id: guid, attributes: { feedUrl: "https://a.example/{x}|%zz" } },
      }),
      await exchange("subscribe", "POST", "/v1/subscriptions", {
        data: { type: "subscription", id: guid, attributes: { feedUrl: "https://a.example/f" } },
      }),
      await exchange("subscribe", "POST", "/v1/subscriptions?include=feed", {}),
      await exchange("getSubscription", "GET", `/v1/subscriptions/${guid}`),
      await exchange("getSubscription", "GET", `/v1/subscriptions/${crypto.randomUUID()}`),
      await exchange("listSubscriptions", "GET", "/v1/subscriptions"),
      await exchange("moveFeed", "PATCH", `/v1/subscriptions/${guid}`, {
        data: { type: "subscription", id: guid, attributes: { feedUrl: "https://b.example/é" } },
      }),
      await exchange(
        "bulkOperations",
        "POST",
        "/v1/operations",
        {
          "atomic:operations": [
            { op: "remove", ref: { type: "subscription", id: guid } },
            { op: "add", data: { type: "subscription", id: guid, attributes: { feedUrl: "ftp://x" } } },
          ],
        },
        atomic,
      ),
      await exchange("listSubscriptions", "GET", "/v1/subscriptions?filter[since]=0"),
    ];
    const lines = served.map(
      ({ operation, status, mediaType, body }, index) =>
        `export const served${index}: Body<"${operation}", ${status}, ${JSON.stringify(mediaType)}> = ${JSON.stringify(body)};`,
    );
    writeFileSync(
      join(app, "served.ts"),
      [
        `import type { operations } from "${PACKAGE.name}";`,
        'type Body<O extends keyof operations, S extends keyof operations[O]["responses"], M extends string> =',
        '  operations[O]["responses"][S] extends { content: infer C } ? (M extends keyof C ? C[M] : never) : never;',
        ...lines,
      ].join("\n"),
    );
    const check = await run(process.execPath, [TSC, "-p", "."], app);
    expect(check.code, `${check.output}\n${readFileSync(join(app, "served.ts"), "utf8")}`).toBe(0);
    // The check has teeth: a member the document does not declare fails it.
    writeFileSync(
      join(app, "served.ts"),
      `${readFileSync(join(app, "served.ts"), "utf8")}\nexport const wrong: Body<"getSubscription", 200, "application/vnd.api+json"> = { ...served3, extra: 1 };\nexport const wrong2: Body<"getSubscription", 200, "application/vnd.api+json"> = { jsonapi: { version: "1.1" }, data: { ...served3.data, attributes: { feedUrl: 1, userSubscribedAt: "" } } };`,
    );
    const refuted = await run(process.execPath, [TSC, "-p", "."], app);
    expect(refuted.code).not.toBe(0);
    expect(refuted.output).toMatch(/served\.ts\(\d+,\d+\): error TS2(322|353)/);
  });
});

describe("client/src/openapi.ts", () => {
  it("is what openapi-typescript makes of the document today (otherwise run `npm run openapi`)", async () => {
    const committed = readFileSync(join(ROOT, "client/src/openapi.ts"), "utf8");
    expect(
      committed === (await renderClientTypes(buildOpenApiDocument())),
      "client/src/openapi.ts is stale: run `npm run openapi`",
    ).toBe(true);
  });
});
