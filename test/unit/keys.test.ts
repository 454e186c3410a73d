import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  displayKey,
  hasAnyPrefix,
  hasPrefix,
  isUtf8,
  keyId,
  leaseDecimal,
  leaseHex,
  parseLeaseHex,
} from '../../src/core/keys';

const b = (...bytes: number[]) => Buffer.from(bytes);
const s = (text: string) => Buffer.from(text, 'utf8');

describe('displayKey', () => {
  test('shows a UTF-8 key as its text', () => {
    assert.equal(displayKey(s('/locks/jobs')), '/locks/jobs');
  });

  test('shows multi-byte UTF-8 (accents, CJK, emoji) as text', () => {
    assert.equal(displayKey(s('/锁/café/🔒')), '/锁/café/🔒');
  });

  test('shows the empty key as the empty string', () => {
    assert.equal(displayKey(b()), '');
  });

  test('does not escape backslashes in a UTF-8 key', () => {
    assert.equal(displayKey(s('a\\b')), 'a\\b');
  });

  test('escapes an invalid byte as \\xNN with two lowercase hex digits', () => {
    assert.equal(displayKey(b(0x61, 0xff, 0x62)), 'a\\xffb');
    assert.equal(displayKey(b(0x80)), '\\x80');
  });

  test('keeps valid multi-byte runs decoded around invalid bytes', () => {
    assert.equal(displayKey(Buffer.concat([s('é'), b(0xfe), s('锁')])), 'é\\xfe锁');
  });

  test('escapes backslashes in a key that needs escaping', () => {
    assert.equal(displayKey(Buffer.concat([s('a\\'), b(0xff)])), 'a\\\\\\xff');
  });

  test('a literal "\\xff" text next to an invalid byte does not look like an escaped byte', () => {
    const literal = Buffer.concat([s('\\xff'), b(0x80)]); // the four characters \ x f f, then 0x80
    const escaped = b(0xff, 0x80);
    assert.notEqual(displayKey(literal), displayKey(escaped));
    assert.equal(displayKey(literal), '\\\\xff\\x80');
    assert.equal(displayKey(escaped), '\\xff\\x80');
  });

  test('two different non-UTF-8 keys never display the same (all 1- and 2-byte keys, and mixes with \\)', () => {
    const seen = new Map<string, string>();
    const checked = new Set<string>();
    const check = (key: Buffer) => {
      if (isUtf8(key)) return;
      checked.add(key.toString('hex'));
      const shown = displayKey(key);
      const other = seen.get(shown);
      assert.ok(other === undefined || other === key.toString('hex'), `${key.toString('hex')} and ${other} both show as ${shown}`);
      seen.set(shown, key.toString('hex'));
    };
    for (let x = 0; x < 256; x++) {
      check(b(x));
      for (let y = 0; y < 256; y++) check(b(x, y));
    }
    for (const tail of [b(0xff), b(0xc3), b(0xe2, 0x82)]) {
      for (const head of ['\\', '\\\\', '\\x', '\\xff', '\\\\xff', 'x', 'ff']) check(Buffer.concat([s(head), tail]));
    }
    assert.ok(checked.size > 40000);
    assert.equal(seen.size, checked.size);
  });

  test('the escaped form parses back to the exact bytes (seeded fuzz of 3000 keys of tricky bytes)', () => {
    // Inverse of displayKey for a key that is not UTF-8: "\\" is a backslash, "\xNN" a byte, any other char its UTF-8.
    const parse = (shown: string): Buffer => {
      const out: Buffer[] = [];
      for (let i = 0; i < shown.length; ) {
        if (shown.startsWith('\\\\', i)) {
          out.push(b(0x5c));
          i += 2;
        } else if (shown.startsWith('\\x', i)) {
          const hex = shown.slice(i + 2, i + 4);
          assert.match(hex, /^[0-9a-f]{2}$/);
          out.push(b(parseInt(hex, 16)));
          i += 4;
        } else {
          assert.notEqual(shown[i], '\\', `lone backslash in ${shown}`);
          const ch = String.fromCodePoint(shown.codePointAt(i)!);
          out.push(s(ch));
          i += ch.length;
        }
      }
      return Buffer.concat(out);
    };
    const alphabet = [0x5c, 0x78, 0x66, 0x61, 0x2f, 0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x82, 0x9f];
    let seed = 12345;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    let nonUtf8 = 0;
    for (let n = 0; n < 3000; n++) {
      const key = Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => alphabet[Math.floor(rnd() * alphabet.length)]));
      const shown = displayKey(key);
      if (isUtf8(key)) {
        assert.deepEqual(s(shown), key);
      } else {
        nonUtf8++;
        assert.deepEqual(parse(shown), key, `${key.toString('hex')} shown as ${shown}`);
      }
    }
    assert.ok(nonUtf8 > 1000);
  });

  test('treats an overlong encoding as invalid bytes', () => {
    // C0 AF is an overlong '/', E0 80 AF an overlong '/' in three bytes.
    assert.equal(displayKey(b(0xc0, 0xaf)), '\\xc0\\xaf');
    assert.equal(displayKey(b(0xe0, 0x80, 0xaf)), '\\xe0\\x80\\xaf');
    assert.equal(displayKey(b(0xf0, 0x80, 0x80, 0xaf)), '\\xf0\\x80\\x80\\xaf');
  });

  test('treats an encoded UTF-16 surrogate as invalid bytes', () => {
    assert.equal(displayKey(b(0xed, 0xa0, 0x80)), '\\xed\\xa0\\x80');
  });

  test('treats code points above U+10FFFF as invalid bytes', () => {
    assert.equal(displayKey(b(0xf4, 0x90, 0x80, 0x80)), '\\xf4\\x90\\x80\\x80');
  });

  test('escapes a truncated sequence at the end of the key', () => {
    assert.equal(displayKey(Buffer.concat([s('k'), b(0xe2, 0x82)])), 'k\\xe2\\x82');
  });

  test('escapes a lead byte whose continuation is missing, then decodes what follows', () => {
    assert.equal(displayKey(Buffer.concat([b(0xc3), s('a€')])), '\\xc3a€');
  });
});

describe('isUtf8', () => {
  test('accepts UTF-8 and rejects invalid bytes', () => {
    assert.equal(isUtf8(s('café')), true);
    assert.equal(isUtf8(b(0xff)), false);
    assert.equal(isUtf8(b(0xc0, 0xaf)), false);
  });
});

describe('keyId', () => {
  test('round-trips every byte value losslessly', () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const id = keyId(all);
    assert.equal(id.length, 256);
    assert.deepEqual(Buffer.from(id, 'latin1'), all, 'one latin1 char per byte');
  });

  test('gives different ids to keys that a lossy UTF-8 decode would merge', () => {
    assert.notEqual(keyId(b(0xff)), keyId(b(0xfe)));
    assert.equal(b(0xff).toString('utf8'), b(0xfe).toString('utf8'));
  });

  test('uses only the viewed bytes of a subarray', () => {
    const big = s('xxprefix/keyyy');
    const view = big.subarray(2, 12);
    assert.equal(keyId(view), 'prefix/key');
    assert.deepEqual(Buffer.from(keyId(view), 'latin1'), s('prefix/key'));
  });

  test('accepts a plain Uint8Array', () => {
    assert.equal(keyId(new Uint8Array([0x61, 0xe9])), 'a\u00e9');
  });
});

describe('hasPrefix', () => {
  test('is true for a key starting with the prefix, including the prefix itself', () => {
    assert.equal(hasPrefix(s('a/b/c'), s('a/')), true);
    assert.equal(hasPrefix(s('a/'), s('a/')), true);
  });

  test('is true for the empty prefix', () => {
    assert.equal(hasPrefix(s('anything'), b()), true);
    assert.equal(hasPrefix(b(), b()), true);
  });

  test('is false for a key shorter than the prefix or differing in a byte', () => {
    assert.equal(hasPrefix(s('a'), s('a/')), false);
    assert.equal(hasPrefix(s('ab/'), s('a/')), false);
    assert.equal(hasPrefix(b(0xff, 0x01), b(0xfe)), false);
  });
});

describe('hasAnyPrefix', () => {
  test('is true when any prefix is the key\'s, false when none is or there is none', () => {
    assert.equal(hasAnyPrefix(s('b/1'), [s('a/'), s('b/')]), true);
    assert.equal(hasAnyPrefix(s('c/1'), [s('a/'), s('b/')]), false);
    assert.equal(hasAnyPrefix(s('c/1'), []), false);
  });
});

describe('leaseHex and leaseDecimal', () => {
  test('converts a decimal lease ID to lowercase hex and back', () => {
    assert.equal(leaseHex('7587855204314074715'), '694d7a1b2c3d4e5b');
    assert.equal(leaseDecimal('694d7a1b2c3d4e5b'), '7587855204314074715');
  });

  test('round-trips values above 2^53 exactly', () => {
    const decimal = BigInt('0x694d7a1b2c3d4e5f').toString(10);
    assert.ok(BigInt(decimal) > 2n ** 53n);
    assert.equal(leaseHex(decimal), '694d7a1b2c3d4e5f');
    assert.equal(leaseDecimal('694d7a1b2c3d4e5f'), decimal);
    assert.equal(leaseHex(leaseDecimal('694d7a1b2c3d4e5f')), '694d7a1b2c3d4e5f');
  });

  test('accepts number and bigint input', () => {
    assert.equal(leaseHex(255), 'ff');
    assert.equal(leaseHex(0x694d7a1b2c3d4e5fn), '694d7a1b2c3d4e5f');
  });

  test('maps lease 0 (no lease) to the empty string', () => {
    assert.equal(leaseHex('0'), '');
    assert.equal(leaseHex(0), '');
  });

  test('round-trips the largest int64 lease ID', () => {
    const max = (2n ** 63n - 1n).toString(10);
    assert.equal(leaseHex(max), '7fffffffffffffff');
    assert.equal(leaseDecimal('7fffffffffffffff'), max);
  });
});

describe('parseLeaseHex', () => {
  test('accepts lowercase hex as etcdctl prints it', () => {
    assert.equal(parseLeaseHex('694d7a1b2c3d4e5f'), '694d7a1b2c3d4e5f');
  });

  test('accepts a 0x prefix', () => {
    assert.equal(parseLeaseHex('0x694d7a1b2c3d4e5f'), '694d7a1b2c3d4e5f');
  });

  test('accepts uppercase hex digits and returns lowercase', () => {
    assert.equal(parseLeaseHex('694D7A1B2C3D4E5F'), '694d7a1b2c3d4e5f');
    assert.equal(parseLeaseHex('0xABC'), 'abc');
  });

  test('trims surrounding whitespace', () => {
    assert.equal(parseLeaseHex('  694d \n'), '694d');
  });

  test('drops leading zeros', () => {
    assert.equal(parseLeaseHex('000694d'), '694d');
  });

  test('accepts exactly 16 hex digits', () => {
    assert.equal(parseLeaseHex('0x7fffffffffffffff'), '7fffffffffffffff');
  });

  test('rejects the empty string and whitespace', () => {
    assert.equal(parseLeaseHex(''), undefined);
    assert.equal(parseLeaseHex('   '), undefined);
    assert.equal(parseLeaseHex('0x'), undefined);
  });

  test('rejects non-hex text', () => {
    for (const t of ['xyz', '694g', '-694d', '694d 1', '0x-1', '69.4']) assert.equal(parseLeaseHex(t), undefined, t);
  });

  test('rejects lease 0', () => {
    assert.equal(parseLeaseHex('0'), undefined);
    assert.equal(parseLeaseHex('0x0000'), undefined);
  });

  test('rejects more than 16 hex digits', () => {
    assert.equal(parseLeaseHex('1694d7a1b2c3d4e5f'), undefined);
    assert.equal(parseLeaseHex('0x1694d7a1b2c3d4e5f'), undefined);
  });

  test('its result converts to the decimal the gRPC API takes', () => {
    assert.equal(leaseDecimal(parseLeaseHex('0x694D7A1B2C3D4E5F')!), BigInt('0x694d7a1b2c3d4e5f').toString(10));
  });
});
