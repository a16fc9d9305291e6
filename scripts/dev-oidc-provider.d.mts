// Types of scripts/dev-oidc-provider.mjs, for the TypeScript that imports it (test-node/global-setup.ts).
import type { IncomingMessage, ServerResponse } from "node:http";

export const DEV_CLIENT_ID: string;
export function signingKey(kid?: string): Record<string, unknown>;
export function devClient(redirectUris: string[]): Record<string, unknown>;
export interface DevProviderOptions {
  clients: Record<string, unknown>[];
  keys?: Record<string, unknown>[];
  idTokenTtl?: number;
}
export function createDevProvider(
  issuer: string,
  options: DevProviderOptions,
): { provider: unknown; handle: (req: IncomingMessage, res: ServerResponse) => void };
export function startDevProvider(options?: { host?: string; port?: number; publicHost?: string }): Promise<{
  issuer: string;
  port: number;
  serve(options: DevProviderOptions): unknown;
  close(): Promise<void>;
}>;
