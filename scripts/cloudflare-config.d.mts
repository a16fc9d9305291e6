/** Types of cloudflare-config.mjs, for the Node-side tests. */
export type DeployTarget = "production" | "preview";
export function configProblems(target: DeployTarget, configPath?: string): string[];
export function configWarnings(target: DeployTarget, configPath?: string): string[];
