/**
 * The signing-key ring of two servers on one store (issue 22): absorbKeyRing merges what another
 * server saved (keys, retirements, revocations) without losing this server's own changes.
 */
import { describe, expect, it } from 'vitest';
import { absorbKeyRing, createKeyRing, issueToken, revokeSubject, revokeTokenId, verifyToken } from '../src/adapters/tokens.js';

const clockAt = (t: { now: number }) => ({ now: () => t.now });

describe('absorbKeyRing', () => {
  it('unions keys, keeps retirements and the later revocation of each subject, drops expired token ids', async () => {
    const t = { now: 1_000_000 };
    const a = createKeyRing(clockAt(t));
    const b = createKeyRing(clockAt(t), a.data());
    t.now += 10;
    const kb = b.rotate(); // B's new key
    revokeSubject(b, 'carol', t.now);
    revokeTokenId(b, 'jti-live', t.now + 60_000);
    revokeTokenId(b, 'jti-old', t.now + 5);
    revokeSubject(a, 'carol', t.now - 5); // an earlier revocation on A
    t.now += 10;
    const ka = a.rotate(); // A rotated later
    absorbKeyRing(a, b.data());
    const kids = a.data().keys.map((k) => k.kid);
    expect(kids).toHaveLength(3);
    expect(a.current().kid).toBe(ka.kid); // the newest key stays current
    expect(kids).toContain(kb.kid);
    expect(a.data().revokedSubjects['carol']).toBe(1_000_010);
    expect(Object.keys(a.data().revokedIds)).toEqual(['jti-live']);
    // B, absorbing A's ring, agrees on every key and on the current one.
    absorbKeyRing(b, a.data());
    expect(b.current().kid).toBe(ka.kid);
    expect(b.data().keys.map((k) => k.kid)).toEqual(kids);
    // A token signed by A verifies on B; B retires A's key and A, absorbing, refuses it.
    const token = await issueToken(a, { subject: 'u', audience: 'portal', binding: { kind: 'none', value: '' }, expiresAt: t.now + 1000 });
    await expect(verifyToken(b, token, { audience: 'portal', request: { ip: '' } })).resolves.toMatchObject({ sub: 'u' });
    b.rotate();
    b.retire(ka.kid);
    absorbKeyRing(a, b.data());
    await expect(verifyToken(a, token, { audience: 'portal', request: { ip: '' } })).rejects.toThrow(/retired/);
  });

  it('a rotation in the same millisecond as the key before it keeps the new key current after a merge', () => {
    const t = { now: 5 };
    const ring = createKeyRing(clockAt(t));
    for (let i = 0; i < 20; i++) {
      const k = ring.rotate();
      absorbKeyRing(ring, ring.data());
      expect(ring.current().kid).toBe(k.kid);
    }
  });
});
