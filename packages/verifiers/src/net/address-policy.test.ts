import { describe, expect, it } from 'vitest';
import { checkAddress, isAllowedHostname, isAllowListEntry } from './address-policy';

describe('checkAddress', () => {
  describe('when the address is special', () => {
    it.each([
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.1.1', 'linkLocal'],
      ['169.254.169.254', 'metadata'],
      ['100.64.0.1', 'carrierGradeNat'],
      ['100.100.100.200', 'metadata'],
      ['168.63.129.16', 'metadata'],
      ['224.0.0.1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['255.255.255.255', 'broadcast'],
      ['240.0.0.1', 'reserved'],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fe80::1', 'linkLocal'],
      ['fc00::1', 'uniqueLocal'],
      ['fd12:3456::1', 'uniqueLocal'],
      ['fd00:ec2::254', 'metadata'],
      ['ff02::1', 'multicast'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:a00:1', 'private'],
      ['::ffff:169.254.169.254', 'metadata'],
      ['64:ff9b::a00:1', 'rfc6052'],
      ['2002:a00:1::', '6to4'],
      ['::7f00:1', 'ipv4Compatible'],
      ['[::1]', 'loopback'],
      ['not-an-ip', 'invalid'],
    ])('refuses %s (%s)', (address, range) => {
      expect(checkAddress(address)).toMatchObject({ allowed: false, range });
    });
  });

  describe('when the address is public unicast', () => {
    it.each(['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
      'allows %s',
      (address) => {
        expect(checkAddress(address)).toMatchObject({ allowed: true, range: 'unicast' });
      },
    );
  });

  describe('when configuration allows an address or a range', () => {
    it('allows exactly that address', () => {
      expect(checkAddress('127.0.0.1', { allowHosts: ['127.0.0.1'] }).allowed).toBe(true);
      expect(checkAddress('127.0.0.2', { allowHosts: ['127.0.0.1'] }).allowed).toBe(false);
      expect(checkAddress('::ffff:127.0.0.1', { allowHosts: ['127.0.0.1'] }).allowed).toBe(true);
    });

    it('allows every address in a CIDR range of the same family', () => {
      expect(checkAddress('10.9.8.7', { allowHosts: ['10.0.0.0/8'] }).allowed).toBe(true);
      expect(checkAddress('fd00::1', { allowHosts: ['10.0.0.0/8'] }).allowed).toBe(false);
    });

    it('never opens a metadata endpoint through a range', () => {
      expect(checkAddress('169.254.169.254', { allowHosts: ['169.254.0.0/16'] }).allowed).toBe(false);
      expect(checkAddress('169.254.169.254', { allowHosts: ['169.254.169.254'] }).allowed).toBe(true);
    });

    it('ignores malformed entries', () => {
      expect(checkAddress('10.0.0.1', { allowHosts: ['10.0.0.0/99', 'nonsense'] }).allowed).toBe(false);
    });
  });
});

describe('isAllowedHostname', () => {
  describe('when the hostname is listed', () => {
    it('matches case-insensitively and ignores a trailing dot', () => {
      expect(isAllowedHostname('Ledger.Internal.', { allowHosts: ['ledger.internal'] })).toBe(true);
    });
  });
  describe('when only an address is listed', () => {
    it('does not treat the address as a hostname', () => {
      expect(isAllowedHostname('127.0.0.1', { allowHosts: ['127.0.0.1'] })).toBe(false);
    });
  });
});

describe('isAllowListEntry', () => {
  describe('when given entries', () => {
    it('accepts hostnames, addresses and CIDR ranges, and refuses the rest', () => {
      expect(['ledger.internal', '127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/8'].every(isAllowListEntry)).toBe(
        true,
      );
      expect(['http://x', '10.0.0.0/99', 'a b', ''].some(isAllowListEntry)).toBe(false);
    });
  });
});
