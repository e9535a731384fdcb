import ipaddr from 'ipaddr.js';

/**
 * Which addresses an outgoing verifier request may reach. Verifiers fetch URLs built from
 * configuration and from what an agent proposed, so a verifier is a textbook SSRF vector:
 * by default only public unicast addresses are reachable. Anything special (loopback, private,
 * link-local, unique-local, CGNAT, multicast, unspecified, reserved, NAT64/6to4/Teredo
 * wrappers that embed IPv4) and the cloud metadata endpoints are refused, unless configuration
 * explicitly allows the host, the address or its range.
 */
export interface AddressPolicy {
  /** Hostnames (exact, case-insensitive), IP addresses or CIDR ranges that may be reached although special. */
  allowHosts?: readonly string[];
}

/** Why an address was refused, or null when it may be reached. */
export interface AddressVerdict {
  allowed: boolean;
  address: string;
  /** ipaddr.js range name (`loopback`, `private`, `uniqueLocal`, ...) or `metadata`. */
  range: string;
}

// Cloud metadata and host-agent endpoints. Most are link-local or CGNAT already; listed anyway
// so that an allow-list entry for a whole private range can never open them by accident.
const METADATA = [
  '169.254.169.254/32', // AWS, GCP, Azure, OpenStack, DigitalOcean
  '169.254.170.2/32', // AWS ECS task metadata
  '100.100.100.200/32', // Alibaba Cloud
  '192.0.0.192/32', // Oracle Cloud
  '168.63.129.16/32', // Azure wire server (public range, still the host's agent)
  'fd00:ec2::254/128', // AWS IPv6
].map((cidr) => ipaddr.parseCIDR(cidr));

// IPv4-compatible IPv6 (::a.b.c.d, deprecated): not in ipaddr.js's special ranges, still not public.
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** Classify one address (IPv4, IPv6 or IPv4-mapped IPv6) under `policy`. */
export function checkAddress(address: string, policy: AddressPolicy = {}): AddressVerdict {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return { allowed: false, address, range: 'invalid' };
  }
  // ::ffff:10.0.0.1 reaches 10.0.0.1: judge the IPv4 address it carries.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  const metadata = METADATA.some(([net, bits]) => net.kind() === parsed.kind() && parsed.match(net, bits));
  const special = parsed.range();
  const compatible = special === 'unicast' && parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE);
  const range = metadata ? 'metadata' : compatible ? 'ipv4Compatible' : special;
  const normalized = parsed.toString();
  if (range === 'unicast') return { allowed: true, address: normalized, range };
  // A metadata endpoint opens only by its exact address, never through a range or a hostname.
  const allowed = metadata ? isAllowedExactly(parsed, policy) : isAllowedAddress(parsed, policy);
  return { allowed, address: normalized, range };
}

function isAllowedExactly(address: ipaddr.IPv4 | ipaddr.IPv6, policy: AddressPolicy): boolean {
  return (policy.allowHosts ?? []).some((entry) => {
    if (!ipaddr.isValid(entry)) return false;
    const allowed = ipaddr.parse(entry);
    return allowed.kind() === address.kind() && allowed.toString() === address.toString();
  });
}

function isAllowedAddress(address: ipaddr.IPv4 | ipaddr.IPv6, policy: AddressPolicy): boolean {
  return (policy.allowHosts ?? []).some((entry) => {
    try {
      if (entry.includes('/')) {
        const [net, bits] = ipaddr.parseCIDR(entry);
        return net.kind() === address.kind() && address.match(net, bits);
      }
      if (ipaddr.isValid(entry)) {
        const allowed = ipaddr.parse(entry);
        return allowed.kind() === address.kind() && allowed.toString() === address.toString();
      }
    } catch {
      return false;
    }
    return false;
  });
}

/** True when the URL's hostname itself is on the allow list (every address it resolves to may then be reached). */
export function isAllowedHostname(hostname: string, policy: AddressPolicy): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return (policy.allowHosts ?? []).some(
    (entry) => !ipaddr.isValid(entry) && !entry.includes('/') && entry.toLowerCase() === host,
  );
}

/** True when `value` is a valid allow-list entry: a hostname, an IP address or a CIDR range. */
export function isAllowListEntry(value: string): boolean {
  if (value.includes('/')) {
    try {
      ipaddr.parseCIDR(value);
      return true;
    } catch {
      return false;
    }
  }
  return (
    ipaddr.isValid(value) ||
    /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(value)
  );
}
