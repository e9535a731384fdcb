import { describe, expect, it } from 'vitest';
import { recordingIo } from '../testing/cli-io';
import { defineCommand, defineGroup } from './command';
import { CliError } from './io';

const fakeIo = () => recordingIo({ cwd: '/' });

const greet = defineCommand({
  name: 'vouch greet',
  summary: 'say hello',
  description: 'Greets someone.',
  options: {
    name: { type: 'string', value: 'N', required: true, help: 'who to greet' },
    loud: { type: 'boolean', help: 'shout\nvery loudly' },
    tag: { type: 'string', value: 'T', multiple: true, help: 'a tag (repeatable)' },
  },
  positionals: [{ name: 'PLACE', optional: true }],
  footer: 'Exit 0: greeted.',
  async action({ values, positionals }, io) {
    if (values.name === 'nobody') throw new CliError('cannot greet nobody');
    const text = `hello ${values.name}${positionals[0] ? ` in ${positionals[0]}` : ''} ${(values.tag ?? []).join(',')}`;
    io.out(`${values.loud ? text.toUpperCase() : text}\n`);
    return 0;
  },
});

async function run(argv: string[], command = greet) {
  const f = fakeIo();
  const code = await command.run(argv, f.io);
  return { code, out: f.out(), err: f.err() };
}

describe('defineCommand', () => {
  it('generates the usage from the declaration: synopsis, description, aligned options, footer', () => {
    expect(greet.usage).toBe(
      [
        'vouch greet [PLACE] --name N [--loud] [--tag T…]',
        '',
        'Greets someone.',
        '',
        '  --name N   who to greet',
        '  --loud     shout',
        '             very loudly',
        '  --tag T    a tag (repeatable)',
        '',
        'Exit 0: greeted.',
      ].join('\n'),
    );
  });

  it('runs the action with the parsed values and positionals', async () => {
    const result = await run(['--name', 'ada', '--loud', '--tag', 'a', '--tag', 'b', 'Paris']);
    expect(result).toEqual({ code: 0, out: 'HELLO ADA IN PARIS A,B\n', err: '' });
  });

  it.each([['--help'], ['-h']])('prints the usage on stdout with exit 0 for %s', async (flag) => {
    const result = await run([flag]);
    expect(result).toEqual({ code: 0, out: `${greet.usage}\n`, err: '' });
  });

  it.each([
    [['--nope'], "Unknown option '--nope'"],
    [['--name'], "Option '--name <value>' argument missing"],
    [['--name', 'ada', 'Paris', 'Rome'], 'unexpected argument Rome'],
  ])('refuses %j with exit 2, the reason and the usage on stderr', async (argv, reason) => {
    const result = await run(argv);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toContain(`vouch greet: ${reason}`);
    expect(result.err).toContain(greet.usage);
  });

  it('reports what the action throws as one line and exit 2', async () => {
    const result = await run(['--name', 'nobody']);
    expect(result).toEqual({ code: 2, out: '', err: 'vouch greet: cannot greet nobody\n' });
  });

  it('names a missing required positional', async () => {
    const revoke = defineCommand({
      name: 'vouch revoke',
      options: {},
      positionals: [{ name: 'KEY_ID' }],
      action: async () => 0,
    });
    const result = await run([], revoke);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/^vouch revoke: missing KEY_ID\n\nvouch revoke KEY_ID\n/);
  });
});

describe('defineGroup', () => {
  let loaded = 0;
  const group = defineGroup({
    name: 'vouch',
    description: 'Commands for tests.',
    commands: [
      greet,
      {
        name: 'vouch later',
        summary: 'loaded when it runs',
        load: async () => {
          loaded++;
          return greet;
        },
      },
    ],
  });

  it('lists its commands with their summaries', () => {
    expect(group.usage).toContain('  vouch greet   say hello\n  vouch later   loaded when it runs');
    expect(group.usage).toContain('Run `vouch <command> --help` for details.');
  });

  it('runs a command by its last word, loading a lazy one only then', async () => {
    expect(loaded).toBe(0);
    expect((await run(['later', '--name', 'ada'], group)).out).toBe('hello ada \n');
    expect(loaded).toBe(1);
  });

  it.each([['help'], ['--help'], ['-h']])('prints its usage with exit 0 for %s', async (word) => {
    expect(await run([word], group)).toEqual({ code: 0, out: `${group.usage}\n`, err: '' });
  });

  it('prints its usage on stderr with exit 2 when no command is given', async () => {
    expect(await run([], group)).toEqual({ code: 2, out: '', err: `${group.usage}\n` });
  });

  it('refuses an unknown command with exit 2', async () => {
    const result = await run(['frobnicate'], group);
    expect(result.code).toBe(2);
    expect(result.err).toContain('vouch: unknown command frobnicate');
  });
});
