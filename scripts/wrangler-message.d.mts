export function wranglerMessage(stdout: string, stderr: string): string;
export function wranglerCommand(args: readonly string[]): string;
