import type { Context } from "hono";
import { DeviceLimitError } from "../db/devices";
import type { NamedDevice } from "../db/gpodder";
import type { AppEnv } from "../env";
import { hasForbiddenUrlCharacter } from "../url-text";
import { badRequest, DEVICE_ID } from "./protocol";

/** Characters (code points) of a device caption (docs/API.md §14). */
export const MAX_CAPTION_CHARACTERS = 100;

/**
 * A device caption as sent, checked: a string of at most 100 characters free of the characters stored URL
 * text refuses (§15: invisible, bidi and control characters would make one device's name pass for another's).
 * One free account stored 100 MB of captions before they were bounded.
 */
export function checkCaption(caption: unknown): string | undefined {
  if (caption === undefined) return undefined;
  if (typeof caption !== "string") throw badRequest("caption must be a string.");
  let characters = 0;
  for (const _ of caption) {
    if (++characters > MAX_CAPTION_CHARACTERS) {
      throw badRequest(`caption must be at most ${MAX_CAPTION_CHARACTERS} characters.`);
    }
  }
  if (hasForbiddenUrlCharacter(caption)) {
    throw badRequest("caption must not hold control, format, private-use or noncharacter code points.");
  }
  return caption;
}

/**
 * Devices this isolate knows exist, so a request naming a device costs no write to create it (docs/API.md
 * §14: any path or action naming an unknown valid device creates it). Devices are only ever removed with the
 * whole account; an entry older than KNOWN_FOR_MS is checked again. Bounded like the other isolate caches.
 */
const KNOWN_FOR_MS = 10 * 60_000;
const MAX_KNOWN_DEVICES = 10_000;
const known = new Map<string, number>();

function deviceKey(userId: string, deviceId: string): string {
  return `${userId}\n${deviceId}`;
}

export function rememberDevice(userId: string, deviceId: string, now: number): void {
  const key = deviceKey(userId, deviceId);
  known.delete(key);
  if (known.size >= MAX_KNOWN_DEVICES) known.delete(known.keys().next().value as string);
  known.set(key, now + KNOWN_FOR_MS);
}

/**
 * Forgets every device of the user this isolate knew (an erasure deleted them all, docs/API.md §15): otherwise a
 * path naming one of them within KNOWN_FOR_MS would neither create it again nor list it. At most 10 000 entries.
 */
export function forgetKnownDevices(userId: string): void {
  const prefix = deviceKey(userId, "");
  for (const key of known.keys()) if (key.startsWith(prefix)) known.delete(key);
}

export function deviceLimitReached(): Error {
  return badRequest("A user may have at most 100 devices.");
}

/**
 * The device a path names, for the request's own batch to create or keep (db/devices.ts, `pathDeviceStatements`):
 * undefined when this isolate knows it exists, so the batch has nothing to write for it. 400 for an id that is not
 * one.
 */
export function pathDevice(c: Context<AppEnv>, deviceId: string): NamedDevice | undefined {
  if (!DEVICE_ID.test(deviceId)) throw badRequest("The device id must match [A-Za-z0-9_.-]{1,64}.");
  const now = Date.now();
  const expires = known.get(deviceKey(c.get("userId"), deviceId));
  return expires !== undefined && expires > now ? undefined : { id: deviceId, at: now };
}

/**
 * Runs a request's batch that creates or keeps `device` (none: the isolate knows it): past the device limit, 400
 * (the batch wrote nothing); the isolate then knows the device.
 */
export async function withPathDevice<T>(
  c: Context<AppEnv>,
  device: NamedDevice | undefined,
  run: () => Promise<T>,
): Promise<T> {
  let result: T;
  try {
    result = await run();
  } catch (err) {
    if (err instanceof DeviceLimitError) throw deviceLimitReached();
    throw err;
  }
  if (device) rememberDevice(c.get("userId"), device.id, device.at);
  return result;
}
