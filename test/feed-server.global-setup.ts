// The local feed server (test/feed-server.ts) for the workerd suite's feed tests: its origin is `provide`d as
// `feedServer` (test/env.d.ts).
import type { TestProject } from "vitest/node";
import { startFeedServer } from "./feed-server";

export default async function setup(project: TestProject) {
  const server = await startFeedServer();
  project.provide("feedServer", server.origin);
  return () => server.close();
}
