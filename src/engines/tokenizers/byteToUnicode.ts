/**
 * GPT-2's byte-level BPE spells every byte as a printable code point. The llama engine
 * reads tokens back to bytes through it; the demo-model generators build vocabularies with it.
 */

/** GPT-2's reversible byte -> printable code point table. */
export function byteToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = "!".charCodeAt(0); b <= "~".charCodeAt(0); b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return table;
}
