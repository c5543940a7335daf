/**
 * `{admin_url}/security`: users and custom roles of the site, managed by the default administrator
 * (protocols.md §2.0 conventions, admin error shape). Writes are POST-only, wait for a running site
 * backup (assertNoSiteBackup) and never echo a password. Changing a user's password, disabling or
 * removing a user revokes every token and OAuth grant the user holds.
 */
import { hashPassword, requireAdministrator } from '../auth.js';
import type { Params, Route } from '../rest.js';
import { assertNoSiteBackup, PRIVILEGES, USER_ROLES, type Privilege, type RoleRecord, type UserRecord, type UserRole } from '../site.js';
import { revokeSubject } from '../tokens.js';
import {
  adminAnswer,
  adminRequest,
  withAdminErrors,
  badRequest,
  conflict,
  notFound,
  required,
  SUCCESS,
  type AdminDeps,
  type Operation,
} from './html.js';

// ---------------------------------------------------------------------------------------------
// Vocabulary

/** Built-in roles by every spelling an operator may use (any case). */
const ROLE_SPELLINGS: Readonly<Record<string, UserRole>> = {
  administrator: 'administrator',
  role_administrator: 'administrator',
  org_admin: 'administrator',
  publisher: 'publisher',
  role_publisher: 'publisher',
  org_publisher: 'publisher',
  user: 'user',
  role_user: 'user',
  org_user: 'user',
};

/** The `role` parameter; absent or blank -> `user` (Decision: least privilege by default). */
export function parseUserRole(value: string | undefined): UserRole {
  if (value === undefined || value.trim() === '') return 'user';
  const role = ROLE_SPELLINGS[value.trim().toLowerCase()];
  if (!role) throw badRequest(`'role' must be one of ${USER_ROLES.join(', ')}; got '${value}'.`, 'role');
  return role;
}

/**
 * Privileges by name (any case). Decision: besides our short names, the portal's long names of the
 * same capabilities are accepted: publishing hosted feature layers (feature layer privilege),
 * publishing server-based layers, and publishing server geoprocessing services.
 */
const PRIVILEGE_SPELLINGS: Readonly<Record<string, Privilege>> = {
  featurelayer: 'featureLayer',
  'portal:publisher:publishfeatures': 'featureLayer',
  geoprocessing: 'geoprocessing',
  'portal:publisher:publishservergpservices': 'geoprocessing',
  publishserverlayers: 'publishServerLayers',
  'portal:publisher:publishserverservices': 'publishServerLayers',
};

/** The `privileges` parameter (comma-joined or a JSON array); every unknown name is reported. */
export function parsePrivileges(params: Params): Privilege[] | undefined {
  const names = params.list('privileges');
  if (names === undefined) return undefined;
  const out = new Set<Privilege>();
  const unknown: string[] = [];
  for (const n of names) {
    const p = PRIVILEGE_SPELLINGS[n.trim().toLowerCase()];
    if (p) out.add(p);
    else unknown.push(n);
  }
  if (unknown.length > 0) {
    const list = unknown.map((u) => `'${u}'`).join(', ');
    throw badRequest(`Unknown privilege${unknown.length > 1 ? 's' : ''} ${list}. Privileges are ${PRIVILEGES.join(', ')}.`, 'privileges');
  }
  return [...out];
}

/** User and role names: 1 to 128 characters, no whitespace or control characters. */
const NAME = /^[^\s\p{Cc}]+$/u;

function validName(kind: 'username' | 'rolename', value: string): string {
  if (!NAME.test(value) || [...value].length > 128) {
    throw badRequest(`'${kind}' must be 1 to 128 characters without spaces or control characters.`, kind);
  }
  return value;
}

/** Decision: at least 8 characters; longer limit guards the hashing cost. */
const MIN_PASSWORD = 8;
const MAX_PASSWORD = 1024;

function validPassword(password: string): string {
  if ([...password].length < MIN_PASSWORD) throw badRequest(`'password' must be at least ${MIN_PASSWORD} characters.`, 'password');
  if (password.length > MAX_PASSWORD) throw badRequest(`'password' must be at most ${MAX_PASSWORD} characters.`, 'password');
  return password;
}

const FREE_TEXT_MAX = 1024;

/** An optional free-text field: undefined when absent, '' clears it. */
function text(params: Params, name: string): string | undefined {
  const v = params.get(name);
  if (v === undefined) return undefined;
  if (v.length > FREE_TEXT_MAX) throw badRequest(`'${name}' must be at most ${FREE_TEXT_MAX} characters.`, name);
  return v.trim();
}

// ---------------------------------------------------------------------------------------------
// Views

/** A user as the admin API shows it (never the password hash). */
export function userView(u: UserRecord): Record<string, unknown> {
  return {
    username: u.username,
    fullname: u.fullName ?? '',
    email: u.email ?? '',
    description: u.description ?? '',
    role: u.role,
    roles: [...u.roles],
    disabled: u.disabled === true,
    ...(u.primary ? { primary: true } : {}),
    created: u.created,
  };
}

const roleView = (r: RoleRecord): Record<string, unknown> => ({
  rolename: r.rolename,
  description: r.description ?? '',
  privileges: [...r.privileges],
});

/** Decision: lists are paged with `startIndex` (default 0) and `maxCount` (default 1000, at most 10000). */
function page<T>(items: readonly T[], params: Params): { items: T[]; total: number; hasMore: boolean } {
  const int = (name: string, dflt: number, min: number, max: number): number => {
    const v = params.get(name);
    if (v === undefined || v.trim() === '') return dflt;
    const n = Number(v.trim());
    if (!Number.isInteger(n) || n < min || n > max) throw badRequest(`'${name}' must be an integer from ${min} to ${max}.`, name);
    return n;
  };
  const start = int('startIndex', 0, 0, Number.MAX_SAFE_INTEGER);
  const count = int('maxCount', 1000, 1, 10000);
  return { items: items.slice(start, start + count), total: items.length, hasMore: start + count < items.length };
}

// ---------------------------------------------------------------------------------------------
// Operations

type Body = (ctx: { req: Request; params: Params }) => Promise<unknown>;

/** A default-administrator operation; `write` makes it POST-only and subject to the backup lock. */
function operation(deps: AdminDeps, op: Operation, write: boolean, body: Body) {
  return withAdminErrors(
    () => op,
    async (req) => {
      const { params, caller } = await adminRequest(deps, req, { write });
      requireAdministrator(caller);
      if (write) await assertNoSiteBackup(deps);
      return adminAnswer(req, params, op, await body({ req, params }));
    },
  );
}

async function existingUser(deps: AdminDeps, username: string): Promise<UserRecord> {
  const u = await deps.store.getUser(username);
  if (!u) throw notFound(`User '${username}' does not exist.`);
  return u;
}

async function existingRole(deps: AdminDeps, rolename: string): Promise<RoleRecord> {
  const r = await deps.store.getRole(rolename);
  if (!r) throw notFound(`Role '${rolename}' does not exist.`);
  return r;
}

/** Every token and OAuth grant of `username` stops working now. */
async function revokeUser(deps: AdminDeps, username: string): Promise<void> {
  revokeSubject(deps.keys, username);
  await deps.saveKeys();
  await deps.store.deleteGrantsOf(username);
}

/** Users named in `users` (all must exist, else one error naming every missing one). */
async function existingUsers(deps: AdminDeps, params: Params): Promise<UserRecord[]> {
  const names = params.list('users');
  if (names === undefined || names.length === 0) throw badRequest(`'users' must be specified.`, 'users');
  const found: UserRecord[] = [];
  const missing: string[] = [];
  for (const n of new Set(names)) {
    const u = await deps.store.getUser(n);
    if (u) found.push(u);
    else missing.push(n);
  }
  if (missing.length > 0) {
    throw notFound(
      `${missing.length > 1 ? 'Users' : 'User'} ${missing.map((m) => `'${m}'`).join(', ')} ${missing.length > 1 ? 'do' : 'does'} not exist.`,
    );
  }
  return found;
}

export function securityRoutes(deps: AdminDeps): Route[] {
  const { store } = deps;
  const base = '/server/admin/security';

  const root = operation(deps, { name: 'Security', fields: [] }, false, async () => ({ resources: ['users', 'roles'] }));

  const listUsers = operation(deps, { name: 'Get Users', fields: ['startIndex', 'maxCount'] }, false, async ({ params }) => {
    const p = page(await store.listUsers(), params);
    return { users: p.items.map(userView), total: p.total, hasMore: p.hasMore };
  });

  const searchUsers = operation(deps, { name: 'Search Users', fields: ['filter', 'startIndex', 'maxCount'] }, false, async ({ params }) => {
    // Decision: `filter` matches a substring of the user name, full name or e-mail, any case.
    const f = (params.get('filter') ?? '').trim().toLowerCase();
    const users = (await store.listUsers()).filter(
      (u) => f === '' || [u.username, u.fullName ?? '', u.email ?? ''].some((s) => s.toLowerCase().includes(f)),
    );
    const p = page(users, params);
    return { users: p.items.map(userView), total: p.total, hasMore: p.hasMore };
  });

  const addUser = operation(
    deps,
    { name: 'Add User', fields: ['username', 'password', 'role', 'fullname', 'email', 'description'] },
    true,
    async ({ params }) => {
      const username = validName('username', required(params, 'username'));
      const given = params.get('password');
      if (given === undefined || given === '') throw badRequest(`'password' must be specified.`, 'password');
      const password = validPassword(given);
      const role = parseUserRole(params.get('role'));
      const fullName = text(params, 'fullname');
      const email = text(params, 'email');
      const description = text(params, 'description');
      // Decision: a duplicate is 409 (CONFLICT) naming the user; user names are case-sensitive.
      if (await store.getUser(username)) throw conflict(`User '${username}' already exists.`);
      await store.putUser({
        username,
        passwordHash: await hashPassword(password),
        role,
        roles: [],
        ...(fullName ? { fullName } : {}),
        ...(email ? { email } : {}),
        ...(description ? { description } : {}),
        created: deps.clock.now(),
      });
      // A former user of the same name may have left tokens behind: they must not come back to life.
      await revokeUser(deps, username);
      return SUCCESS;
    },
  );

  const removeUser = operation(deps, { name: 'Remove User', fields: ['username'] }, true, async ({ params }) => {
    const user = await existingUser(deps, required(params, 'username'));
    if (user.primary) throw badRequest(`The primary site administrator '${user.username}' cannot be removed.`, 'username');
    await store.deleteUser(user.username);
    await revokeUser(deps, user.username);
    return SUCCESS;
  });

  const updateUser = operation(
    deps,
    { name: 'Update User', fields: ['username', 'password', 'role', 'fullname', 'email', 'description', 'disabled'] },
    true,
    async ({ params }) => {
      const user = await existingUser(deps, required(params, 'username'));
      const password = params.get('password');
      if (password !== undefined) validPassword(password);
      const disabled = params.bool('disabled');
      if (disabled === true && user.primary)
        throw badRequest(`The primary site administrator '${user.username}' cannot be disabled.`, 'disabled');
      // Decision: `role` (any spelling add accepts) changes the built-in role; the primary administrator stays one.
      const role = params.has('role') ? parseUserRole(params.get('role')) : undefined;
      if (role !== undefined && role !== 'administrator' && user.primary) {
        throw badRequest(`The primary site administrator '${user.username}' must keep the administrator role.`, 'role');
      }
      const fields: Record<string, string | undefined> = {
        fullName: text(params, 'fullname'),
        email: text(params, 'email'),
        description: text(params, 'description'),
      };
      const next: Record<string, unknown> = { ...user };
      for (const [k, v] of Object.entries(fields)) {
        if (v === undefined) continue;
        if (v === '') delete next[k];
        else next[k] = v;
      }
      if (role !== undefined) next['role'] = role;
      if (password !== undefined) next['passwordHash'] = await hashPassword(password);
      if (disabled !== undefined) {
        if (disabled) next['disabled'] = true;
        else delete next['disabled'];
      }
      await store.putUser(next as unknown as UserRecord);
      if (password !== undefined || (disabled === true && user.disabled !== true)) await revokeUser(deps, user.username);
      return SUCCESS;
    },
  );

  const listRoles = operation(deps, { name: 'Get Roles', fields: ['startIndex', 'maxCount'] }, false, async ({ params }) => {
    const p = page(await store.listRoles(), params);
    return { roles: p.items.map(roleView), total: p.total, hasMore: p.hasMore };
  });

  const getPrivileges = operation(deps, { name: 'Get Privileges', fields: ['rolename'] }, false, async ({ params }) => {
    const role = await existingRole(deps, required(params, 'rolename'));
    return { rolename: role.rolename, privileges: [...role.privileges] };
  });

  const addRole = operation(deps, { name: 'Add Role', fields: ['rolename', 'description', 'privileges'] }, true, async ({ params }) => {
    const rolename = validName('rolename', required(params, 'rolename'));
    // Decision: a custom role may not take the name of a built-in one (it would not grant what its name says).
    if (ROLE_SPELLINGS[rolename.toLowerCase()]) throw badRequest(`'${rolename}' is the name of a built-in role.`, 'rolename');
    const privileges = parsePrivileges(params) ?? [];
    const description = text(params, 'description');
    if (await store.getRole(rolename)) throw conflict(`Role '${rolename}' already exists.`);
    await store.putRole({ rolename, privileges, ...(description ? { description } : {}) });
    return SUCCESS;
  });

  const updateRole = operation(
    deps,
    { name: 'Update Role', fields: ['rolename', 'description', 'privileges'] },
    true,
    async ({ params }) => {
      const role = await existingRole(deps, required(params, 'rolename'));
      const privileges = parsePrivileges(params);
      const description = text(params, 'description');
      const next: Record<string, unknown> = { ...role };
      if (privileges !== undefined) next['privileges'] = privileges;
      if (description === '') delete next['description'];
      else if (description !== undefined) next['description'] = description;
      await store.putRole(next as unknown as RoleRecord);
      return SUCCESS;
    },
  );

  const removeRole = operation(deps, { name: 'Remove Role', fields: ['rolename'] }, true, async ({ params }) => {
    const role = await existingRole(deps, required(params, 'rolename'));
    for (const u of await store.listUsers()) {
      if (u.roles.includes(role.rolename)) await store.putUser({ ...u, roles: u.roles.filter((r) => r !== role.rolename) });
    }
    await store.deleteRole(role.rolename);
    return SUCCESS;
  });

  const addUsersToRole = operation(deps, { name: 'Add Users To Role', fields: ['rolename', 'users'] }, true, async ({ params }) => {
    const role = await existingRole(deps, required(params, 'rolename'));
    const users = await existingUsers(deps, params);
    for (const u of users) if (!u.roles.includes(role.rolename)) await store.putUser({ ...u, roles: [...u.roles, role.rolename] });
    return SUCCESS;
  });

  const removeUsersFromRole = operation(
    deps,
    { name: 'Remove Users From Role', fields: ['rolename', 'users'] },
    true,
    async ({ params }) => {
      const role = await existingRole(deps, required(params, 'rolename'));
      const users = await existingUsers(deps, params);
      for (const u of users)
        if (u.roles.includes(role.rolename)) await store.putUser({ ...u, roles: u.roles.filter((r) => r !== role.rolename) });
      return SUCCESS;
    },
  );

  // Token signing keys (Decision: the vendor rotates its shared key with security/tokens/update; here a
  // rotation adds a new current key and older keys keep verifying until retired, so live tokens
  // survive a rotation and retiring a key ends the tokens it signed). Secrets are never shown.
  const keyView = (k: { kid: string; createdAt: number; retiredAt?: number }) => ({
    kid: k.kid,
    created: k.createdAt,
    ...(k.retiredAt !== undefined ? { retired: k.retiredAt } : {}),
    current: deps.keys.current().kid === k.kid,
  });
  const listKeys = operation(deps, { name: 'Token Signing Keys', fields: [] }, false, () =>
    Promise.resolve({ keys: deps.keys.data().keys.map(keyView) }),
  );
  const rotateKey = operation(deps, { name: 'Rotate Signing Key', fields: [] }, true, async () => {
    const k = deps.keys.rotate();
    await deps.saveKeys();
    return { status: 'success', kid: k.kid };
  });
  const retireKey = operation(deps, { name: 'Retire Signing Key', fields: ['kid'] }, true, async ({ params }) => {
    const kid = required(params, 'kid');
    const key = deps.keys.data().keys.find((k) => k.kid === kid);
    if (!key) throw notFound(`Signing key '${kid}' does not exist.`);
    if (deps.keys.current().kid === kid) throw badRequest(`Signing key '${kid}' is the current key; rotate first.`, 'kid');
    if (key.retiredAt === undefined) {
      deps.keys.retire(kid);
      await deps.saveKeys();
    }
    return SUCCESS;
  });

  const routes: [string, ReturnType<typeof operation>][] = [
    ['/tokens', listKeys],
    ['/tokens/rotateKey', rotateKey],
    ['/tokens/retireKey', retireKey],
    ['', root],
    ['/users', listUsers],
    ['/users/getUsers', listUsers],
    ['/users/search', searchUsers],
    ['/users/add', addUser],
    ['/users/remove', removeUser],
    ['/users/update', updateUser],
    ['/roles', listRoles],
    ['/roles/getRoles', listRoles],
    ['/roles/getPrivileges', getPrivileges],
    ['/roles/add', addRole],
    ['/roles/update', updateRole],
    ['/roles/remove', removeRole],
    ['/roles/addUsersToRole', addUsersToRole],
    ['/roles/removeUsersFromRole', removeUsersFromRole],
  ];
  return routes.map(([path, handler]) => ({ method: 'ALL' as const, path: `${base}${path}`, handler }));
}
