/**
 * Assembles the deps every adapter receives (issue 17) from a store: the site configuration with
 * the organization id, the signing-key ring persisted in the store, the event bus that webhook
 * delivery listens on, and the primary administrator of the first start.
 */
import { randomBytes } from 'node:crypto';
import { hashPassword } from '../adapters/auth.js';
import {
  DEFAULT_SITE_CONFIG,
  silentLogger,
  type Logger,
  type SiteConfig,
  type SiteDeps,
  type SiteEvent,
  type SiteStore,
} from '../adapters/site.js';
import { createKeyRing, systemClock, type Clock, type KeyRingData } from '../adapters/tokens.js';
import { saveKeyRing, SIGNING_KEYS_SETTING } from './site-events.js';

export interface OpenSiteOptions {
  readonly store: SiteStore;
  readonly dataDir: string;
  readonly clock?: Clock;
  readonly config?: Partial<Omit<SiteConfig, 'dataDir'>>;
  readonly log?: Logger;
}

/** SiteDeps plus what the host needs: event listeners. */
export interface Site extends SiteDeps {
  /** Listen to site events (webhook delivery registers here); answers an unsubscribe function. */
  on(listener: (event: SiteEvent) => void): () => void;
}

const KEYS = SIGNING_KEYS_SETTING;
const PORTAL_ID = 'portalId';

/** Loads (or creates and saves) the signing keys and the organization id, and wires the event bus. */
export async function openSite(options: OpenSiteOptions): Promise<Site> {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  let portalId = options.config?.portalId ?? (await store.getSetting<string>(PORTAL_ID));
  if (portalId === undefined) {
    portalId = randomBytes(12).toString('base64url');
    await store.putSetting(PORTAL_ID, portalId);
  }
  const config: SiteConfig = { ...DEFAULT_SITE_CONFIG, ...options.config, portalId, dataDir: options.dataDir };
  if (config.maxTokenMinutes > 21600 || config.maxTokenMinutes < 1) {
    throw new Error(`maxTokenMinutes must be 1 to 21600 (15 days), got ${config.maxTokenMinutes}`);
  }
  const saved = await store.getSetting<KeyRingData>(KEYS);
  const keys = createKeyRing(clock, saved ?? {});
  // Merged with what other servers on the same store saved meanwhile, under a store lock (site-events.ts).
  const saveKeys = (): Promise<void> => saveKeyRing(store, keys);
  if (!saved) await saveKeys();
  const listeners = new Set<(event: SiteEvent) => void>();
  const log = options.log ?? silentLogger;
  return {
    store,
    clock,
    config,
    keys,
    saveKeys,
    log,
    emit: (event) => {
      for (const l of listeners) {
        try {
          l(event);
        } catch (e) {
          log.warn('an event listener failed', { changeType: event.changeType, error: String(e) });
        }
      }
    },
    on: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * First start: when the store has no user, creates the primary site administrator from the given
 * credentials, or with a generated password which is returned (the host prints it once). Later
 * starts change nothing and answer undefined.
 */
export async function ensurePrimaryAdministrator(
  site: Pick<SiteDeps, 'store' | 'clock'>,
  username = 'admin',
  password?: string,
): Promise<{ username: string; generatedPassword?: string } | undefined> {
  if ((await site.store.listUsers()).length > 0) return undefined;
  const generated = password === undefined || password === '' ? randomBytes(18).toString('base64url') : undefined;
  await site.store.putUser({
    username,
    passwordHash: await hashPassword(generated ?? password!),
    role: 'administrator',
    roles: [],
    primary: true,
    created: site.clock.now(),
  });
  return { username, ...(generated ? { generatedPassword: generated } : {}) };
}
