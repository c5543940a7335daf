/**
 * Enterprise login of the organization (seed §5, Authentication 7; protocols.md §4): registering a
 * SAML federation of identity providers, registering a single identity provider, reading either
 * back, and removing it so that an administrator can switch. An organization has a single IdP or a
 * federation, never both (seed "What the service does" 4).
 *
 * Endpoints (under `{sharing_url}/portals/<portal_id>/idp`):
 * - `POST federation/register` (POST only) -> `{"success":true,"federationId":"..."}`
 * - `GET  federation` -> the registered federation (`{}` when none)
 * - `POST federation/unregister` -> `{"success":true}`
 * - `POST register` (a single IdP) -> `{"success":true,"idpId":"..."}`
 * - `GET  ` (the idp root) -> the registered IdP (`{}` when none)
 * - `POST <idpId>/remove` -> `{"success":true}`
 *
 * Every endpoint: HTTPS when allSSL, a portal token, the caller an administrator of `<portal_id>`.
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { authenticate, forbidden, isAdministrator, PORTAL_AUDIENCE, type Caller } from '../auth.js';
import {
  MessageError,
  readParams,
  requireHttps,
  requirePost,
  respond,
  withRestErrors,
  type Handler,
  type Params,
  type Route,
} from '../rest.js';
import { fromTrustedProxy, originOf, USER_ROLES, type FederationRecord, type IdentityProviderRecord, type SiteDeps } from '../site.js';

export type FederationDeps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock'>;

const PORTALS = '/portal/sharing/rest/portals';

// ---------------------------------------------------------------------------------------------
// What the organization has

/**
 * Decision: user license types an organization of rasterflow offers (the vendor's identifiers, so
 * that scripts written for the vendor work): viewer, contributor/editor, mobile worker, creator and
 * the three GIS Professional levels. `level` 1 maps to `viewerUT`, 2 to `creatorUT`.
 */
export const LICENSE_TYPES = [
  'viewerUT',
  'editorUT',
  'contributorUT',
  'fieldWorkerUT',
  'creatorUT',
  'GISProfessionalBasicUT',
  'GISProfessionalStdUT',
  'GISProfessionalAdvUT',
] as const;

/**
 * Decision: the vendor's built-in role ids are accepted as aliases of rasterflow's built-in roles
 * (`org_admin` -> administrator, `org_publisher` -> publisher, `org_user` -> user); other role ids
 * must be a built-in role or a custom role of the store.
 */
const ROLE_ALIASES: Readonly<Record<string, string>> = { org_admin: 'administrator', org_publisher: 'publisher', org_user: 'user' };

const BOOLEAN_FLAGS = [
  'encryptionSupported',
  'supportSignedRequest',
  'supportsLogoutRequest',
  'updateProfileAtSignin',
  'updateGroupsAtSignin',
] as const;

// ---------------------------------------------------------------------------------------------
// Shared steps

interface Context {
  readonly params: Params;
  readonly caller: Caller;
  readonly portalId: string;
}

/** HTTPS, method, token, portal id, administrator of that organization: in that order. */
async function admit(deps: FederationDeps, req: Request, portalId: string, post: boolean): Promise<Context> {
  requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
  if (post) requirePost(req);
  const params = await readParams(req);
  const caller = await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params });
  if (portalId !== deps.config.portalId) throw new MessageError('Invalid portal id.', []);
  // rasterflow has one organization: its administrators are the users with the administrator role.
  if (!isAdministrator(caller)) throw forbidden(`${caller.username} is not an administrator of organization ${portalId}`);
  return { params, caller, portalId };
}

const randomId = (): string => randomBytes(12).toString('base64url').replace(/[-_]/g, 'x').slice(0, 16);

/** An absolute https URL. */
function isHttpsUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'https:' && u.host !== '';
  } catch {
    return false;
  }
}

const PEM = /^-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----$/;

/**
 * Whether `text` is one PEM certificate: the markers, base64 between them (whitespace ignored) and
 * a DER X.509 certificate inside. Expired certificates are accepted (protocols.md §4.3: signers are
 * rotated; validity is enforced when metadata signatures are verified).
 */
export function isPemCertificate(text: string): boolean {
  const m = PEM.exec(text.trim());
  if (!m) return false;
  const b64 = m[1]!.replace(/\s+/g, '');
  if (b64 === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return false;
  try {
    new X509Certificate(Buffer.from(b64, 'base64'));
    return true;
  } catch {
    return false;
  }
}

/** The `portalId` and tail of a path under `{sharing_url}/portals/`. */
function portalPath(req: Request): { portalId: string; rest: string[] } {
  const path = new URL(req.url).pathname;
  const tail = path
    .slice(PORTALS.length + 1)
    .split('/')
    .filter((s) => s !== '');
  return { portalId: decodeURIComponent(tail[0] ?? ''), rest: tail.slice(1).map(decodeURIComponent) };
}

async function assertNothingRegistered(deps: FederationDeps, portalId: string, problems: string[]): Promise<void> {
  const feds = await deps.store.listFederations(portalId);
  const idps = await deps.store.listIdentityProviders(portalId);
  if (feds.length > 0 || idps.length > 0) problems.push('An identity provider or federation is already registered for this organization.');
}

// ---------------------------------------------------------------------------------------------
// Federation register (protocols.md §4)

export type FederationSettings = {
  readonly userCreditAssignment: number;
  readonly groups: readonly string[];
  readonly encryptionSupported: boolean;
  readonly supportSignedRequest: boolean;
  readonly supportsLogoutRequest: boolean;
  readonly updateProfileAtSignin: boolean;
  readonly updateGroupsAtSignin: boolean;
  readonly signUpMode: 'Automatic' | 'Invitation';
  readonly roleId?: string;
  readonly userLicenseType?: string;
  readonly userType: 'arcgisonly' | 'both';
};

async function register(deps: FederationDeps, req: Request): Promise<Response> {
  const { portalId } = portalPath(req);
  const { params } = await admit(deps, req, portalId, true);
  const problems: string[] = [];
  const text = (k: string): string | undefined => {
    const v = params.get(k)?.trim();
    return v === undefined || v === '' ? undefined : v;
  };

  // Required parameters, then the URL form (the order of protocols.md §4.3).
  const discoveryServiceUrl = text('discoveryServiceUrl');
  const metadataServiceUrl = text('metadataServiceUrl');
  const name = text('name');
  if (discoveryServiceUrl === undefined) problems.push(`'discoveryServiceUrl' must be specified.`);
  if (metadataServiceUrl === undefined) problems.push(`'metadataServiceUrl' must be specified.`);
  if (name === undefined) problems.push(`'name' must be specified.`);
  if (discoveryServiceUrl !== undefined && !isHttpsUrl(discoveryServiceUrl))
    problems.push(`'discoveryServiceUrl' must be an absolute HTTPS URL.`);
  if (metadataServiceUrl !== undefined && !isHttpsUrl(metadataServiceUrl))
    problems.push(`'metadataServiceUrl' must be an absolute HTTPS URL.`);

  const certificate = text('certificate');
  if (certificate !== undefined && !isPemCertificate(certificate)) {
    problems.push(`'certificate' must be base64 text between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE----- lines.`);
  }

  // Decision: signUpMode defaults to Invitation (nobody gets an account without an invitation
  // unless the administrator asks for it); values match in any case and are stored as documented.
  const signUpRaw = text('signUpMode');
  const signUpMode =
    signUpRaw === undefined
      ? 'Invitation'
      : (['Automatic', 'Invitation'] as const).find((m) => m.toLowerCase() === signUpRaw.toLowerCase());
  if (signUpMode === undefined) problems.push(`'signUpMode' must be Automatic or Invitation.`);

  const userTypeRaw = text('userType');
  const userType =
    userTypeRaw === undefined ? 'arcgisonly' : (['arcgisonly', 'both'] as const).find((t) => t === userTypeRaw.toLowerCase());
  if (userType === undefined) problems.push(`'userType' must be arcgisonly or both.`);

  const creditRaw = text('userCreditAssignment');
  const userCreditAssignment = creditRaw === undefined ? -1 : /^[+-]?\d+$/.test(creditRaw) ? Number(creditRaw) : NaN;
  if (!Number.isSafeInteger(userCreditAssignment) || userCreditAssignment < -1) {
    problems.push(`'userCreditAssignment' must be an integer greater than or equal to -1.`);
  }

  const flags: Record<string, boolean> = {};
  for (const k of BOOLEAN_FLAGS) {
    const v = text(k);
    if (v === undefined) flags[k] = false;
    else if (v.toLowerCase() === 'true' || v.toLowerCase() === 'false') flags[k] = v.toLowerCase() === 'true';
    else problems.push(`'${k}' must be true or false.`);
  }

  // Deprecated `level`: 1 (viewer) or 2 (creator); used only when userLicenseType is absent.
  const level = text('level');
  if (level !== undefined && level !== '1' && level !== '2') problems.push(`'level' must be 1 or 2.`);
  const userLicenseType = text('userLicenseType') ?? (level === '1' ? 'viewerUT' : level === '2' ? 'creatorUT' : undefined);
  const roleId = text('roleId');
  let groups: string[] = [];
  try {
    groups = params.list('groups') ?? [];
  } catch {
    problems.push(`'groups' must be a list of group ids.`);
  }

  // What the organization has: checked only when members join automatically (seed §5).
  if (signUpMode === 'Automatic') {
    if (roleId !== undefined) {
      const role = ROLE_ALIASES[roleId] ?? roleId;
      const known = (USER_ROLES as readonly string[]).includes(role) || (await deps.store.getRole(role)) !== undefined;
      if (!known) problems.push(`'roleId' refers to an unknown role, license type or group: ${roleId}.`);
    }
    if (userLicenseType !== undefined && !(LICENSE_TYPES as readonly string[]).includes(userLicenseType)) {
      problems.push(`'userLicenseType' refers to an unknown role, license type or group: ${userLicenseType}.`);
    }
    // Decision: rasterflow organizations have no groups, so every group id is unknown.
    if (groups.length > 0) problems.push(`'groups' refers to an unknown role, license type or group: ${groups.join(', ')}.`);
  }

  await assertNothingRegistered(deps, portalId, problems);
  if (problems.length > 0) throw new MessageError('Unable to register federation.', problems);

  const settings: FederationSettings = {
    userCreditAssignment,
    groups,
    encryptionSupported: flags['encryptionSupported']!,
    supportSignedRequest: flags['supportSignedRequest']!,
    supportsLogoutRequest: flags['supportsLogoutRequest']!,
    updateProfileAtSignin: flags['updateProfileAtSignin']!,
    updateGroupsAtSignin: flags['updateGroupsAtSignin']!,
    signUpMode: signUpMode!,
    ...(roleId !== undefined ? { roleId } : {}),
    ...(userLicenseType !== undefined ? { userLicenseType } : {}),
    userType: userType!,
  };
  const record: FederationRecord = {
    id: randomId(),
    portalId,
    name: name!,
    discoveryServiceUrl: discoveryServiceUrl!,
    metadataServiceUrl: metadataServiceUrl!,
    ...(certificate !== undefined ? { certificate } : {}),
    // Decision (protocols.md §4.3): the organization's public host identifies it by default.
    entityId: text('entityId') ?? new URL(originOf(req, deps.config)).host,
    settings,
    created: deps.clock.now(),
  };
  await deps.store.putFederation(record);
  return respond(params.get('f'), { success: true, federationId: record.id });
}

/** The read-back: the vendor's documented fields. */
function federationView(f: FederationRecord): Record<string, unknown> {
  const s = f.settings as Partial<FederationSettings>;
  return {
    id: f.id,
    name: f.name,
    discoveryServiceUrl: f.discoveryServiceUrl,
    metadataServiceUrl: f.metadataServiceUrl,
    certificate: f.certificate ?? '',
    entityId: f.entityId,
    signUpMode: s.signUpMode,
    encryptionSupported: s.encryptionSupported,
    supportSignedRequest: s.supportSignedRequest,
    supportsLogoutRequest: s.supportsLogoutRequest,
    updateProfileAtSignin: s.updateProfileAtSignin,
    updateGroupsAtSignin: s.updateGroupsAtSignin,
    roleId: s.roleId ?? '',
    userLicenseType: s.userLicenseType ?? '',
    userCreditAssignment: s.userCreditAssignment,
    groups: s.groups ?? [],
    userType: s.userType,
    created: f.created,
  };
}

async function readFederation(deps: FederationDeps, req: Request): Promise<Response> {
  const { portalId } = portalPath(req);
  const { params } = await admit(deps, req, portalId, false);
  const [f] = await deps.store.listFederations(portalId);
  // Decision: an organization without a federation answers an empty object.
  return respond(params.get('f'), f ? federationView(f) : {});
}

async function unregisterFederation(deps: FederationDeps, req: Request): Promise<Response> {
  const { portalId } = portalPath(req);
  const { params } = await admit(deps, req, portalId, true);
  const feds = await deps.store.listFederations(portalId);
  if (feds.length === 0) throw new MessageError('Unable to unregister federation.', ['No federation is registered for this organization.']);
  for (const f of feds) await deps.store.deleteFederation(f.id);
  return respond(params.get('f'), { success: true });
}

// ---------------------------------------------------------------------------------------------
// A single identity provider

type StoredIdp = IdentityProviderRecord & { readonly metadata?: string };

async function registerIdp(deps: FederationDeps, req: Request): Promise<Response> {
  const { portalId } = portalPath(req);
  const { params } = await admit(deps, req, portalId, true);
  const problems: string[] = [];
  const name = params.get('name')?.trim() || undefined;
  const metadataUrl = params.get('metadataUrl')?.trim() || undefined;
  const file = params.file('metadataFile');
  const metadata = (file ? await file.text() : params.get('metadataFile'))?.trim() || undefined;
  if (name === undefined) problems.push(`'name' must be specified.`);
  if (metadataUrl === undefined && metadata === undefined) problems.push(`'metadataUrl' or 'metadataFile' must be specified.`);
  if (metadataUrl !== undefined && !isHttpsUrl(metadataUrl)) problems.push(`'metadataUrl' must be an absolute HTTPS URL.`);
  // Decision: a metadata file must at least be an XML document with a SAML EntityDescriptor.
  if (metadata !== undefined && !(metadata.startsWith('<') && /<(\w+:)?EntityDescriptor[\s>]/.test(metadata))) {
    problems.push(`'metadataFile' must be SAML metadata XML (an EntityDescriptor).`);
  }
  await assertNothingRegistered(deps, portalId, problems);
  if (problems.length > 0) throw new MessageError('Unable to register identity provider.', problems);
  const record: StoredIdp = {
    id: randomId(),
    portalId,
    name: name!,
    ...(metadataUrl !== undefined ? { metadataUrl } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
    created: deps.clock.now(),
  };
  await deps.store.putIdentityProvider(record);
  return respond(params.get('f'), { success: true, idpId: record.id });
}

async function readIdp(deps: FederationDeps, req: Request): Promise<Response> {
  const { portalId } = portalPath(req);
  const { params } = await admit(deps, req, portalId, false);
  const [idp] = (await deps.store.listIdentityProviders(portalId)) as StoredIdp[];
  return respond(
    params.get('f'),
    idp
      ? { id: idp.id, name: idp.name, metadataUrl: idp.metadataUrl ?? '', metadataFile: idp.metadata !== undefined, created: idp.created }
      : {},
  );
}

async function removeIdp(deps: FederationDeps, req: Request): Promise<Response> {
  const { portalId, rest } = portalPath(req);
  const { params } = await admit(deps, req, portalId, true);
  const idpId = rest[1] ?? '';
  const idps = await deps.store.listIdentityProviders(portalId);
  if (!idps.some((i) => i.id === idpId))
    throw new MessageError('Unable to remove identity provider.', [`Identity provider '${idpId}' does not exist.`]);
  await deps.store.deleteIdentityProvider(idpId);
  return respond(params.get('f'), { success: true });
}

// ---------------------------------------------------------------------------------------------
// Routes

/** The federation and identity-provider endpoints of the sharing API. */
export function federationRoutes(deps: FederationDeps): Route[] {
  const h = (fn: (d: FederationDeps, r: Request) => Promise<Response>): Handler => withRestErrors('sharing', (req) => fn(deps, req));
  const base = `${PORTALS}/:portalId/idp`;
  return [
    { method: 'ALL', path: `${base}/federation/register`, handler: h(register) },
    { method: 'ALL', path: `${base}/federation/unregister`, handler: h(unregisterFederation) },
    { method: 'ALL', path: `${base}/federation`, handler: h(readFederation) },
    { method: 'ALL', path: `${base}/register`, handler: h(registerIdp) },
    { method: 'ALL', path: `${base}/:idpId/remove`, handler: h(removeIdp) },
    { method: 'ALL', path: base, handler: h(readIdp) },
  ];
}
