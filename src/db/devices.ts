import { sql } from "drizzle-orm";
import { credentialGuard, runGuarded, type WriteCredential } from "./app-passwords";
import { WriteBatch } from "./batch";
import { call, type Database } from "./database";
import { devices as d, userStats as stats } from "./schema";
import { failedWith, failure, type Statement, statement } from "./statements";

/** gpodder devices per user (docs/API.md §14). */
export const MAX_DEVICES = 100;

export interface StoredDevice {
  id: string;
  caption: string;
  type: string;
  /** The user's active subscriptions: all devices of a user share one list. */
  subscriptions: number;
}

const userId = sql.placeholder("userId");
const deviceId = sql.placeholder("deviceId");

/**
 * Creates the device (caption `""`, type `other` unless given) or updates what is given; a new one only while
 * the user has fewer than the limit, checked inside the statement. Returns a row when the device exists after it.
 */
const upsertStatement = statement(sql`
  INSERT INTO ${d} (user_id, device_id, caption, type, created_at)
  SELECT ${userId}, ${deviceId}, coalesce(${sql.placeholder("caption")}, ''), coalesce(${sql.placeholder("type")}, 'other'),
    ${sql.placeholder("now")}
  WHERE (SELECT count(*) FROM ${d} WHERE ${d.userId} = ${userId}) < ${MAX_DEVICES}
    OR EXISTS (SELECT 1 FROM ${d} WHERE ${d.userId} = ${userId} AND ${d.deviceId} = ${deviceId})
  ON CONFLICT (user_id, device_id) DO UPDATE SET
    caption = coalesce(${sql.placeholder("caption")}, caption), type = coalesce(${sql.placeholder("type")}, type)
  RETURNING 1 AS stored`);

const listStatement = statement(sql`
  SELECT ${d.deviceId} AS id, ${d.caption} AS caption, ${d.type} AS type,
    coalesce((SELECT ${stats.activeCount} FROM ${stats} WHERE ${stats.userId} = ${userId}), 0) AS subscriptions
  FROM ${d} WHERE ${d.userId} = ${userId} ORDER BY ${d.createdAt}, ${d.deviceId}`);

/** The ids alone, in the list's order: what sync-devices answers, without the captions. */
const idsStatement = statement(sql`
  SELECT ${d.deviceId} AS id FROM ${d} WHERE ${d.userId} = ${userId} ORDER BY ${d.createdAt}, ${d.deviceId}`);

/** The statement that creates or updates a device (for a batch that creates the devices it names). */
export function deviceStatement(
  db: Database,
  user: string,
  device: { id: string; caption?: string; type?: string },
  at: number,
): D1PreparedStatement {
  const values = {
    userId: user,
    deviceId: device.id,
    caption: device.caption ?? null,
    type: device.type ?? null,
    now: at,
  };
  return upsertStatement.bind(db, values);
}

/** What names the device guard's failure in D1's error (statements.ts, `failure`). */
const DEVICE_LIMIT_REACHED = "gpodder-device-limit-reached";

/** Fails the batch (nothing written) unless the device exists: after its upsert, which past the limit writes nothing. */
const deviceGuardStatement = statement(sql`
  SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM ${d} WHERE ${d.userId} = ${userId} AND ${d.deviceId} = ${deviceId})
    THEN ${failure(DEVICE_LIMIT_REACHED)} END AS refused`);

/** A request named a new device while its user had the most: its batch wrote nothing. */
export class DeviceLimitError extends Error {
  constructor() {
    super("the user has the most devices");
    this.name = "DeviceLimitError";
  }
}

/**
 * The device a request's path names, created or kept by the request's own batch (docs/API.md §14: a path naming an
 * unknown device creates it), after the caller's credential guard: past the device limit the batch fails and writes
 * nothing. Run the batch with `runNamingDevice`.
 */
export function pathDeviceStatements(db: Database, user: string, id: string, at: number): D1PreparedStatement[] {
  return [deviceStatement(db, user, { id }, at), deviceGuardStatement.bind(db, { userId: user, deviceId: id })];
}

/** Runs a batch holding `pathDeviceStatements`: the device guard's failure becomes DeviceLimitError. */
export async function runNamingDevice(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (failedWith(err, DEVICE_LIMIT_REACHED)) throw new DeviceLimitError();
    throw err;
  }
}

/**
 * Creates or updates a device, guarded by the caller's credential (one batch: a credential that no longer exists
 * writes nothing, CredentialEndedError); false when it is new and the user already has the most devices.
 */
export async function saveDevice(
  db: Database,
  caller: WriteCredential,
  device: { id: string; caption?: string; type?: string },
  at: number,
): Promise<boolean> {
  const batch = new WriteBatch();
  batch.push(credentialGuard(db, caller));
  const slot = batch.push(deviceStatement(db, caller.userId, device, at));
  await runGuarded(() => batch.run(db), caller);
  return slot.results()[0].results.length > 0;
}

/** The user's devices, oldest first. */
export async function listDevices(db: Database, user: string): Promise<StoredDevice[]> {
  const { results } = await call(() => listStatement.bind(db, { userId: user }).all<StoredDevice>());
  return results;
}

/** The ids of the user's devices, oldest first. */
export async function listDeviceIds(db: Database, user: string): Promise<string[]> {
  const { results } = await call(() => idsStatement.bind(db, { userId: user }).all<{ id: string }>());
  return results.map((row) => row.id);
}

export const deviceStatements: Record<string, Statement> = {
  upsert: upsertStatement,
  list: listStatement,
  ids: idsStatement,
  guard: deviceGuardStatement,
};
