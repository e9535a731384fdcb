import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhookSignature } from './webhook-signature';

const secret = 'whsec_test_0123456789';
const body = '{"id":"whd_1","type":"approval.requested"}';
const t = 1_800_000_000;

describe('signWebhook', () => {
  describe('when signing a body', () => {
    it('gives t and the HMAC-SHA256 of "<t>.<body>", as an independent implementation computes it', async () => {
      const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
      expect(await signWebhook({ secret, body, timestamp: t })).toBe(`t=${t},v1=${expected}`);
    });
  });
});

describe('verifyWebhookSignature', () => {
  const check = async (over: { header?: string | null; body?: string; now?: number; secret?: string }) =>
    verifyWebhookSignature({
      secret: over.secret ?? secret,
      header: over.header === undefined ? await signWebhook({ secret, body, timestamp: t }) : over.header,
      body: over.body ?? body,
      now: over.now ?? t + 10,
    });

  describe('when the body, timestamp and secret are the signed ones', () => {
    it('is valid', async () => {
      expect(await check({})).toEqual({ valid: true, timestamp: t });
    });
  });
  describe('when the body was changed by one byte', () => {
    it('is SIGNATURE_MISMATCH', async () => {
      expect(await check({ body: body.replace('requested', 'requesteD') })).toMatchObject({
        valid: false,
        code: 'SIGNATURE_MISMATCH',
      });
    });
  });
  describe('when another secret signed it', () => {
    it('is SIGNATURE_MISMATCH', async () => {
      expect(await check({ secret: `${secret}x` })).toMatchObject({
        valid: false,
        code: 'SIGNATURE_MISMATCH',
      });
    });
  });
  describe('when the timestamp was moved to now (a replay re-stamped)', () => {
    it('is SIGNATURE_MISMATCH: t is signed too', async () => {
      const signed = await signWebhook({ secret, body, timestamp: t });
      const restamped = signed.replace(`t=${t}`, `t=${t + 3600}`);
      expect(await check({ header: restamped, now: t + 3600 })).toMatchObject({ code: 'SIGNATURE_MISMATCH' });
    });
  });
  describe('when the signature is older than the window', () => {
    it('is SIGNATURE_EXPIRED, and valid one second inside it', async () => {
      expect(await check({ now: t + 301 })).toMatchObject({ valid: false, code: 'SIGNATURE_EXPIRED' });
      expect(await check({ now: t + 300 })).toMatchObject({ valid: true });
      expect(await check({ now: t - 301 })).toMatchObject({ code: 'SIGNATURE_EXPIRED' });
    });
  });
  describe('when the header is missing or malformed', () => {
    it.each([
      [null, 'SIGNATURE_MISSING'],
      ['', 'SIGNATURE_MISSING'],
      ['v1=abc', 'SIGNATURE_MALFORMED'],
      [`t=${t}`, 'SIGNATURE_MALFORMED'],
      [`t=soon,v1=${'0'.repeat(64)}`, 'SIGNATURE_MALFORMED'],
      [`t=${t},v1=${'0'.repeat(63)}`, 'SIGNATURE_MALFORMED'],
    ])('%s is %s', async (header, code) => {
      expect(await check({ header })).toMatchObject({ valid: false, code });
    });
  });
  describe('when one of several v1 entries matches (a secret being rotated)', () => {
    it('is valid', async () => {
      const signed = await signWebhook({ secret, body, timestamp: t });
      const header = `t=${t},v1=${'0'.repeat(64)},${signed.split(',')[1]}`;
      expect(await check({ header })).toMatchObject({ valid: true });
    });
  });
});
