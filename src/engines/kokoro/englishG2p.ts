import { normalizeEnglishText } from "./numbersToWords.js";

/**
 * Hearth's built-in English grapheme-to-phoneme fallback for Kokoro, used when espeak-ng (the
 * `phonemizer` package) is not installed. It is deterministic and small: a lexicon of about
 * 250 frequent and irregular words, then ordered letter-to-sound rules (longest match first,
 * with a little context), then a stress mark before the vowel of the stressed syllable.
 *
 * It writes misaki's phoneme alphabet, the one Kokoro v1.0 was trained on: diphthongs as single
 * letters (A = eɪ, I = aɪ, W = aʊ, Y = ɔɪ, O = oʊ, Q = əʊ in British English), ʤ and ʧ for the
 * affricates, ɹ for r, and ˈ before a stressed vowel. Every symbol it writes is in Kokoro's
 * vocabulary.
 *
 * What it is not: a dictionary-quality phonemizer. Irregular words outside the lexicon come out
 * as a reader who guesses from spelling would say them, and stress is guessed from simple
 * prefix/suffix patterns. Real deployments should install espeak-ng through the `phonemizer`
 * package (what kokoro-js uses); see the README.
 */

export type EnglishDialect = "en-us" | "en-gb";

/** US pronunciations in misaki's alphabet; "ˈ" marks primary stress, none on function words. */
const LEXICON: Readonly<Record<string, string>> = Object.freeze({
  a: "ɐ",
  about: "ɐbˈWt",
  above: "ɐbˈʌv",
  after: "ˈæftəɹ",
  again: "ɐɡˈɛn",
  against: "ɐɡˈɛnst",
  all: "ˈɔl",
  almost: "ˈɔlmOst",
  also: "ˈɔlsO",
  always: "ˈɔlwAz",
  am: "æm",
  among: "ɐmˈʌŋ",
  an: "ən",
  and: "ænd",
  another: "ɐnˈʌðəɹ",
  answer: "ˈænsəɹ",
  any: "ˈɛni",
  anyone: "ˈɛniwʌn",
  are: "ɑɹ",
  around: "ɐɹˈWnd",
  as: "æz",
  ask: "ˈæsk",
  at: "æt",
  audio: "ˈɔdiO",
  away: "ɐwˈA",
  back: "bˈæk",
  be: "bi",
  beautiful: "bjˈuɾɪfəl",
  because: "bɪkˈʌz",
  been: "bɪn",
  before: "bɪfˈɔɹ",
  being: "bˈiɪŋ",
  below: "bɪlˈO",
  between: "bɪtwˈin",
  both: "bˈOθ",
  boy: "bˈY",
  brown: "bɹˈWn",
  busy: "bˈɪzi",
  but: "bʌt",
  buy: "bˈI",
  by: "bI",
  call: "kˈɔl",
  came: "kˈAm",
  can: "kæn",
  child: "ʧˈIld",
  children: "ʧˈɪldɹən",
  city: "sˈɪɾi",
  come: "kˈʌm",
  could: "kʊd",
  country: "kˈʌntɹi",
  day: "dˈA",
  did: "dɪd",
  different: "dˈɪfəɹənt",
  do: "du",
  does: "dʌz",
  dog: "dˈɔɡ",
  done: "dˈʌn",
  door: "dˈɔɹ",
  down: "dˈWn",
  each: "ˈiʧ",
  early: "ˈɜɹli",
  earth: "ˈɜɹθ",
  eight: "ˈAt",
  eighteen: "Atˈin",
  eighty: "ˈAɾi",
  eleven: "ɪlˈɛvən",
  else: "ˈɛls",
  end: "ˈɛnd",
  enough: "ɪnˈʌf",
  even: "ˈivən",
  every: "ˈɛvɹi",
  eye: "ˈI",
  father: "fˈɑðəɹ",
  few: "fjˈu",
  fifteen: "fɪftˈin",
  fifty: "fˈɪfti",
  find: "fˈInd",
  first: "fˈɜɹst",
  five: "fˈIv",
  for: "fɔɹ",
  forty: "fˈɔɹɾi",
  four: "fˈɔɹ",
  fourteen: "fɔɹtˈin",
  fox: "fˈɑks",
  friend: "fɹˈɛnd",
  from: "fɹʌm",
  get: "ɡˈɛt",
  girl: "ɡˈɜɹl",
  give: "ɡˈɪv",
  go: "ɡˈO",
  gone: "ɡˈɔn",
  good: "ɡˈʊd",
  great: "ɡɹˈAt",
  group: "ɡɹˈup",
  guess: "ɡˈɛs",
  had: "hæd",
  half: "hˈæf",
  has: "hæz",
  have: "hæv",
  he: "hi",
  head: "hˈɛd",
  heart: "hˈɑɹt",
  hello: "həlˈO",
  her: "hɜɹ",
  here: "hˈɪɹ",
  him: "hɪm",
  his: "hɪz",
  home: "hˈOm",
  hour: "ˈWəɹ",
  house: "hˈWs",
  how: "hˈW",
  hundred: "hˈʌndɹəd",
  i: "ˈI",
  if: "ɪf",
  in: "ɪn",
  into: "ˈɪntu",
  is: "ɪz",
  island: "ˈIlənd",
  it: "ɪt",
  its: "ɪts",
  jumps: "ʤˈʌmps",
  just: "ʤˈʌst",
  key: "kˈi",
  know: "nˈO",
  knew: "nˈu",
  kokoro: "kˈOkəɹO",
  language: "lˈæŋɡwɪʤ",
  laugh: "lˈæf",
  lazy: "lˈAzi",
  learn: "lˈɜɹn",
  like: "lˈIk",
  little: "lˈɪɾəl",
  live: "lˈɪv",
  long: "lˈɔŋ",
  look: "lˈʊk",
  love: "lˈʌv",
  made: "mˈAd",
  make: "mˈAk",
  many: "mˈɛni",
  may: "mˈA",
  me: "mi",
  mean: "mˈin",
  million: "mˈɪljən",
  minute: "mˈɪnɪt",
  model: "mˈɑdəl",
  money: "mˈʌni",
  more: "mˈɔɹ",
  morning: "mˈɔɹnɪŋ",
  most: "mˈOst",
  mother: "mˈʌðəɹ",
  move: "mˈuv",
  much: "mˈʌʧ",
  music: "mjˈuzɪk",
  must: "mʌst",
  my: "mI",
  name: "nˈAm",
  near: "nˈɪɹ",
  need: "nˈid",
  never: "nˈɛvəɹ",
  new: "nˈu",
  next: "nˈɛkst",
  night: "nˈIt",
  nine: "nˈIn",
  nineteen: "nIntˈin",
  ninety: "nˈInti",
  no: "nˈO",
  none: "nˈʌn",
  not: "nɑt",
  nothing: "nˈʌθɪŋ",
  now: "nˈW",
  number: "nˈʌmbəɹ",
  of: "ʌv",
  off: "ˈɔf",
  often: "ˈɔfən",
  oh: "ˈO",
  oil: "ˈYl",
  old: "ˈOld",
  on: "ɑn",
  once: "wˈʌns",
  one: "wˈʌn",
  only: "ˈOnli",
  open: "ˈOpən",
  or: "ɔɹ",
  other: "ˈʌðəɹ",
  our: "ˈWəɹ",
  out: "ˈWt",
  over: "ˈOvəɹ",
  own: "ˈOn",
  people: "pˈipəl",
  percent: "pəɹsˈɛnt",
  person: "pˈɜɹsən",
  place: "plˈAs",
  please: "plˈiz",
  point: "pˈYnt",
  pretty: "pɹˈɪɾi",
  put: "pˈʊt",
  question: "kwˈɛsʧən",
  quick: "kwˈɪk",
  read: "ɹˈid",
  really: "ɹˈiəli",
  right: "ɹˈIt",
  said: "sˈɛd",
  same: "sˈAm",
  say: "sˈA",
  says: "sˈɛz",
  school: "skˈul",
  second: "sˈɛkənd",
  see: "sˈi",
  sentence: "sˈɛntəns",
  seven: "sˈɛvən",
  seventeen: "sɛvəntˈin",
  seventy: "sˈɛvənti",
  she: "ʃi",
  should: "ʃʊd",
  show: "ʃˈO",
  six: "sˈɪks",
  sixteen: "sɪkstˈin",
  sixty: "sˈɪksti",
  small: "smˈɔl",
  so: "sˈO",
  some: "sʌm",
  something: "sˈʌmθɪŋ",
  sound: "sˈWnd",
  speech: "spˈiʧ",
  still: "stˈɪl",
  story: "stˈɔɹi",
  sure: "ʃˈʊɹ",
  take: "tˈAk",
  talk: "tˈɔk",
  tell: "tˈɛl",
  ten: "tˈɛn",
  text: "tˈɛkst",
  than: "ðæn",
  thank: "θˈæŋk",
  thanks: "θˈæŋks",
  that: "ðæt",
  the: "ðə",
  their: "ðɛɹ",
  them: "ðɛm",
  // biome-ignore lint/suspicious/noThenProperty: the word "then" in a pronunciation table, not a thenable
  then: "ðɛn",
  there: "ðɛɹ",
  these: "ðiz",
  they: "ðA",
  thing: "θˈɪŋ",
  think: "θˈɪŋk",
  thirteen: "θɜɹtˈin",
  thirty: "θˈɜɹɾi",
  this: "ðɪs",
  those: "ðOz",
  though: "ðO",
  thought: "θˈɔt",
  thousand: "θˈWzənd",
  three: "θɹˈi",
  through: "θɹu",
  time: "tˈIm",
  to: "tə",
  today: "tədˈA",
  together: "təɡˈɛðəɹ",
  too: "tˈu",
  twelve: "twˈɛlv",
  twenty: "twˈɛnti",
  two: "tˈu",
  under: "ˈʌndəɹ",
  until: "əntˈɪl",
  up: "ˈʌp",
  us: "ʌs",
  use: "jˈuz",
  very: "vˈɛɹi",
  voice: "vˈYs",
  want: "wˈɑnt",
  was: "wʌz",
  watch: "wˈɑʧ",
  water: "wˈɔɾəɹ",
  way: "wˈA",
  we: "wi",
  weather: "wˈɛðəɹ",
  welcome: "wˈɛlkəm",
  well: "wˈɛl",
  went: "wˈɛnt",
  were: "wɜɹ",
  what: "wʌt",
  when: "wɛn",
  where: "wɛɹ",
  which: "wɪʧ",
  while: "wˈIl",
  who: "hu",
  whole: "hˈOl",
  why: "wˈI",
  will: "wɪl",
  with: "wɪð",
  woman: "wˈʊmən",
  women: "wˈɪmɪn",
  word: "wˈɜɹd",
  work: "wˈɜɹk",
  world: "wˈɜɹld",
  would: "wʊd",
  write: "ɹˈIt",
  year: "jˈɪɹ",
  yes: "jˈɛs",
  you: "ju",
  young: "jˈʌŋ",
  your: "jʊɹ",
  zero: "zˈɪɹO",
});

/** Letter names, for acronyms spelled out ("API" -> A P I). */
const LETTER_NAMES: Readonly<Record<string, string>> = Object.freeze({
  a: "ˈA",
  b: "bˈi",
  c: "sˈi",
  d: "dˈi",
  e: "ˈi",
  f: "ˈɛf",
  g: "ʤˈi",
  h: "ˈAʧ",
  i: "ˈI",
  j: "ʤˈA",
  k: "kˈA",
  l: "ˈɛl",
  m: "ˈɛm",
  n: "ˈɛn",
  o: "ˈO",
  p: "pˈi",
  q: "kjˈu",
  r: "ˈɑɹ",
  s: "ˈɛs",
  t: "tˈi",
  u: "jˈu",
  v: "vˈi",
  w: "dˈʌbəlju",
  x: "ˈɛks",
  y: "wˈI",
  z: "zˈi",
});

interface Rule {
  /** Letters matched at the current position. */
  letters: string;
  ipa: string;
  /** Must match the rest of the word after the letters. */
  next?: RegExp;
  /** Must match the word before the letters. */
  prev?: RegExp;
}

const CONSONANT = "[bcdfghjklmnpqrstvwxz]";
const VOWEL = "[aeiouy]";
/** A single consonant then a final silent e (with an optional -s/-d): the "magic e" that lengthens the vowel before it. */
const MAGIC_E = new RegExp(`^(?:${CONSONANT}|th|ch|sh)e(?:s|d|ly|ful|ment|ness|less)?$`);

/** Ordered by length so the longest letters win; the first rule whose context fits applies. */
const RULES: readonly Rule[] = (
  [
    // Endings and suffixes.
    { letters: "tion", ipa: "ʃən" },
    { letters: "sion", ipa: "ʒən", prev: new RegExp(`${VOWEL}$`) },
    { letters: "sion", ipa: "ʃən" },
    { letters: "cian", ipa: "ʃən" },
    { letters: "ture", ipa: "ʧəɹ" },
    { letters: "ough", ipa: "ɔ" },
    { letters: "augh", ipa: "ɔ" },
    { letters: "eigh", ipa: "A" },
    { letters: "ious", ipa: "iəs" },
    { letters: "eous", ipa: "iəs" },
    { letters: "ness", ipa: "nəs", next: /^$/ },
    { letters: "less", ipa: "ləs", next: /^$/ },
    { letters: "ment", ipa: "mənt", next: /^s?$/ },
    { letters: "able", ipa: "əbəl", next: /^$/ },
    { letters: "ible", ipa: "ɪbəl", next: /^$/ },
    { letters: "igh", ipa: "I" },
    { letters: "ous", ipa: "əs", next: /^$/ },
    { letters: "ful", ipa: "fəl", next: /^$/ },
    { letters: "ing", ipa: "ɪŋ", next: /^s?$/ },
    { letters: "tch", ipa: "ʧ" },
    { letters: "dge", ipa: "ʤ" },
    { letters: "air", ipa: "ɛɹ" },
    { letters: "are", ipa: "ɛɹ", next: /^$/ },
    { letters: "ear", ipa: "ɪɹ", next: new RegExp(`^(?:$|s|${VOWEL})`) },
    { letters: "ear", ipa: "ɜɹ" },
    { letters: "eer", ipa: "ɪɹ" },
    { letters: "ere", ipa: "ɪɹ", next: /^$/ },
    { letters: "ire", ipa: "Iəɹ", next: /^s?$/ },
    { letters: "ore", ipa: "ɔɹ", next: /^s?$/ },
    { letters: "ure", ipa: "jʊɹ", next: /^s?$/ },
    { letters: "age", ipa: "ɪʤ", next: /^s?$/, prev: /.../ },
    { letters: "ity", ipa: "ɪɾi", next: /^$/ },
    { letters: "ies", ipa: "iz", next: /^$/, prev: /../ },
    { letters: "ied", ipa: "id", next: /^$/, prev: /../ },
    { letters: "sch", ipa: "sk" },
    { letters: "ck", ipa: "k" },
    { letters: "ch", ipa: "ʧ" },
    { letters: "sh", ipa: "ʃ" },
    { letters: "th", ipa: "θ" },
    { letters: "ph", ipa: "f" },
    { letters: "wh", ipa: "w" },
    { letters: "wr", ipa: "ɹ", prev: /^$/ },
    { letters: "kn", ipa: "n", prev: /^$/ },
    { letters: "gn", ipa: "n", prev: /^$/ },
    { letters: "gn", ipa: "n", next: /^$/ },
    { letters: "mb", ipa: "m", next: /^$/ },
    { letters: "gh", ipa: "ɡ", prev: /^$/ },
    { letters: "gh", ipa: "" },
    { letters: "ng", ipa: "ŋ", next: new RegExp(`^(?:$|s$|${CONSONANT})`) },
    { letters: "ng", ipa: "ŋɡ" },
    { letters: "nk", ipa: "ŋk" },
    { letters: "qu", ipa: "kw" },
    { letters: "ed", ipa: "ɪd", next: /^$/, prev: /[td]$/ },
    { letters: "ed", ipa: "t", next: /^$/, prev: /(?:[pkfsx]|ch|sh)$/ },
    { letters: "ed", ipa: "d", next: /^$/, prev: /..$/ },
    { letters: "es", ipa: "ɪz", next: /^$/, prev: /(?:[sxzgc]|ch|sh)$/ },
    { letters: "le", ipa: "əl", next: /^s?$/, prev: new RegExp(`${CONSONANT}$`) },
    { letters: "ly", ipa: "li", next: /^$/, prev: /../ },
    { letters: "al", ipa: "əl", next: /^$/, prev: /../ },
    { letters: "en", ipa: "ən", next: /^$/, prev: /.../ },
    { letters: "on", ipa: "ən", next: /^$/, prev: /.../ },
    { letters: "er", ipa: "əɹ", next: /^s?$/, prev: /./ },
    { letters: "or", ipa: "əɹ", next: /^s?$/, prev: /../ },
    { letters: "ar", ipa: "əɹ", next: /^s?$/, prev: /.../ },
    { letters: "ar", ipa: "ɑɹ" },
    { letters: "er", ipa: "ɜɹ" },
    { letters: "ir", ipa: "ɜɹ" },
    { letters: "ur", ipa: "ɜɹ" },
    { letters: "or", ipa: "ɔɹ" },
    // Vowel pairs.
    { letters: "ai", ipa: "A" },
    { letters: "ay", ipa: "A" },
    { letters: "ee", ipa: "i" },
    { letters: "ea", ipa: "i" },
    { letters: "ei", ipa: "A" },
    { letters: "ey", ipa: "i", next: /^$/ },
    { letters: "ey", ipa: "A" },
    { letters: "ie", ipa: "I", next: /^$/, prev: new RegExp(`^${CONSONANT}$`) },
    { letters: "ie", ipa: "i" },
    { letters: "oa", ipa: "O" },
    { letters: "oo", ipa: "ʊ", next: /^k/ },
    { letters: "oo", ipa: "u" },
    { letters: "ou", ipa: "W" },
    { letters: "ow", ipa: "O", next: /^(?:$|s$|n)/ },
    { letters: "ow", ipa: "W" },
    { letters: "oi", ipa: "Y" },
    { letters: "oy", ipa: "Y" },
    { letters: "oe", ipa: "O", next: /^s?$/ },
    { letters: "au", ipa: "ɔ" },
    { letters: "aw", ipa: "ɔ" },
    { letters: "ew", ipa: "u" },
    { letters: "ue", ipa: "u", next: /^s?$/ },
    { letters: "ui", ipa: "u" },
    // Long vowels before -tion and a magic e.
    { letters: "a", ipa: "A", next: /^tion/ },
    { letters: "a", ipa: "A", next: MAGIC_E },
    { letters: "e", ipa: "i", next: MAGIC_E },
    { letters: "i", ipa: "I", next: MAGIC_E },
    { letters: "o", ipa: "O", next: MAGIC_E },
    { letters: "u", ipa: "ju", next: MAGIC_E },
    { letters: "y", ipa: "I", next: MAGIC_E },
    // A silent final e, and doubled consonants said once.
    { letters: "e", ipa: "", next: /^(?:s|d)?$/, prev: new RegExp(`${VOWEL}.*${CONSONANT}$`) },
    ...["bb", "dd", "ff", "gg", "kk", "ll", "mm", "nn", "pp", "rr", "ss", "tt", "vv", "zz"].map((pair) => ({ letters: pair, ipa: "" })),
    // Open syllables at the end of short words, and y.
    { letters: "o", ipa: "O", next: /^$/, prev: /./ },
    { letters: "e", ipa: "i", next: /^$/, prev: new RegExp(`^${CONSONANT}+$`) },
    { letters: "y", ipa: "I", next: /^$/, prev: new RegExp(`^${CONSONANT}+$`) },
    { letters: "y", ipa: "i", next: /^$/ },
    { letters: "y", ipa: "j", prev: /^$/ },
    { letters: "y", ipa: "j", next: new RegExp(`^${VOWEL}`) },
    { letters: "y", ipa: "ɪ" },
    // Single letters.
    { letters: "a", ipa: "ɐ", next: /^$/ },
    { letters: "a", ipa: "æ" },
    { letters: "e", ipa: "ɛ" },
    { letters: "i", ipa: "ɪ" },
    { letters: "o", ipa: "ɑ" },
    { letters: "u", ipa: "ʊ", prev: /(?:p|b|f)$/, next: /^(?:ll|sh|t$)/ },
    { letters: "u", ipa: "ʌ" },
    { letters: "c", ipa: "s", next: /^[eiy]/ },
    { letters: "c", ipa: "k" },
    { letters: "g", ipa: "ʤ", next: /^[eiy]/, prev: /./ },
    { letters: "g", ipa: "ɡ" },
    { letters: "s", ipa: "z", next: /^$/, prev: /[aeiouybdglmnrvw]$/ },
    { letters: "s", ipa: "z", next: new RegExp(`^${VOWEL}`), prev: new RegExp(`${VOWEL}$`) },
    { letters: "s", ipa: "s" },
    { letters: "x", ipa: "z", prev: /^$/ },
    { letters: "x", ipa: "ks" },
    { letters: "j", ipa: "ʤ" },
    { letters: "r", ipa: "ɹ" },
    ...["b", "d", "f", "h", "k", "l", "m", "n", "p", "t", "v", "w", "z"].map((letter) => ({ letters: letter, ipa: letter })),
  ] satisfies Rule[]
)
  .map((rule, order) => ({ rule, order }))
  .sort((a, b) => b.rule.letters.length - a.rule.letters.length || a.order - b.order)
  .map(({ rule }) => rule);

const RULES_BY_FIRST_LETTER = new Map<string, Rule[]>();
for (const rule of RULES) {
  const first = rule.letters[0]!;
  const list = RULES_BY_FIRST_LETTER.get(first) ?? [];
  list.push(rule);
  RULES_BY_FIRST_LETTER.set(first, list);
}

/** Prefixes that are usually unstressed, moving stress to the next syllable. */
const UNSTRESSED_PREFIX = /^(?:a(?=[bcdglmnprstvw][aeiouy])|(?:be|de|re|pre|con|com|ex|en|em|for|pro|sub|sur|per|ad|ob|mis|dis)(?=[a-z]{3,}))/;
const VOWELS = "aeiouæɑɐɒɔəɛɜɪʊʌᵻAIOQWY";
/** Words said without stress in running speech. */
const FUNCTION_WORDS = new Set(
  "a an the and but or nor of to in on at by for from with as is am are was were be been being have has had do does did can could will would shall should may might must i me my we us our you your he him his she her it its they them their this that these those than then there what when where which who whom how if not so up".split(
    " ",
  ),
);

/** Letter-to-sound rules over one lower-case word. */
function spell(word: string): string {
  let out = "";
  let i = 0;
  while (i < word.length) {
    const rest = word.slice(i);
    const rules = RULES_BY_FIRST_LETTER.get(word[i]!) ?? [];
    const rule = rules.find((r) => rest.startsWith(r.letters) && (!r.next || r.next.test(rest.slice(r.letters.length))) && (!r.prev || r.prev.test(word.slice(0, i))));
    if (!rule) {
      i++;
      continue;
    }
    out += rule.ipa;
    // A doubled consonant rule emits nothing: the second letter is read by its own rule.
    i += rule.ipa === "" && rule.letters.length === 2 && rule.letters[0] === rule.letters[1] ? 1 : rule.letters.length;
  }
  return out;
}

/** Start offsets of the vowel nuclei (runs of vowel symbols) in a phoneme string. */
function nuclei(ipa: string): number[] {
  const starts: number[] = [];
  for (let i = 0; i < ipa.length; i++) {
    if (VOWELS.includes(ipa[i]!) && (i === 0 || !VOWELS.includes(ipa[i - 1]!))) starts.push(i);
  }
  return starts;
}

/** Puts ˈ before the vowel of the syllable a reader would stress. */
function addStress(word: string, ipa: string): string {
  const starts = nuclei(ipa);
  if (starts.length === 0) return ipa;
  let target = 0;
  if (starts.length >= 2) {
    if (/(?:ʃən|ʒən)$/.test(ipa) || /ɪk$/.test(ipa)) target = starts.length - 2;
    else if (/ɪɾi$/.test(ipa)) target = Math.max(0, starts.length - 3);
    else if (UNSTRESSED_PREFIX.test(word)) target = 1;
  }
  const at = starts[target]!;
  return `${ipa.slice(0, at)}ˈ${ipa.slice(at)}`;
}

/** British English from the American forms: non-rhotic, əʊ for oʊ, ɒ for the short o. */
function toBritish(ipa: string, word: string): string {
  let out = ipa
    .replace(/O/g, "Q")
    .replace(/ɜɹ/g, "ɜː")
    .replace(/ɑɹ/g, "ɑː")
    .replace(/ɔɹ/g, "ɔː")
    .replace(/ɪɹ/g, "ɪə")
    .replace(/ɛɹ/g, "ɛə")
    .replace(/ʊɹ/g, "ʊə")
    .replace(/əɹ(?=$|[^aeiouæɑɐɒɔəɛɜɪʊʌAIOQWY])/g, "ə")
    .replace(/ɾ/g, "t");
  if (/o/.test(word)) out = out.replace(/ɑ(?!ː)/g, "ɒ");
  return out;
}

function wordToIpa(word: string, dialect: EnglishDialect): string {
  let ipa: string;
  const lower = word.toLowerCase();
  const known = LEXICON[lower];
  if (known !== undefined) ipa = known;
  else if (/^[A-Z]{2,5}$/.test(word) && !/[AEIOU]/.test(word.slice(1, -1))) {
    // An acronym without inner vowels (TTS, API, HTTP) is spelled out.
    // Secondary stress on every letter but the last, as in "ˌAˌpˈI".
    ipa = [...lower].map((c) => LETTER_NAMES[c] ?? "").join("");
    const last = ipa.lastIndexOf("ˈ");
    ipa = ipa.slice(0, last).replaceAll("ˈ", "ˌ") + ipa.slice(last);
  } else if (lower.length === 1) ipa = LETTER_NAMES[lower] ?? "";
  else if (/'s$/.test(lower) && LEXICON[lower.slice(0, -2)] !== undefined) ipa = `${LEXICON[lower.slice(0, -2)]}z`;
  else {
    const stem = lower.replace(/'/g, "");
    ipa = spell(stem);
    if (!FUNCTION_WORDS.has(stem)) ipa = addStress(stem, ipa);
  }
  return dialect === "en-gb" ? toBritish(ipa, lower) : ipa;
}

/** Punctuation Kokoro reads as prosody; kept in the phoneme string. */
const PUNCTUATION = new Set([".", ",", "!", "?", ";", ":", "—", "…", '"', "(", ")", "“", "”"]);
const CLOSING = new Set([".", ",", "!", "?", ";", ":", "…", ")", "”"]);

/**
 * English text to a Kokoro phoneme string ("Hello, world!" -> "həlˈO, wˈɜɹld!").
 * Deterministic; drops characters it cannot read.
 */
export function englishToPhonemes(text: string, dialect: EnglishDialect = "en-us"): string {
  const normalized = normalizeEnglishText(text)
    .replace(/\.\.\./g, "…")
    .replace(/\s+-+\s+|--/g, " — ");
  const tokens = normalized.match(/[A-Za-z]+(?:'[A-Za-z]+)*|[.,!?;:—…"()“”]/g) ?? [];
  let out = "";
  for (const token of tokens) {
    if (PUNCTUATION.has(token)) {
      if (token === "—") out = `${out.trimEnd()} — `;
      else if (CLOSING.has(token)) out = `${out.trimEnd()}${token} `;
      else out += token;
      continue;
    }
    const ipa = wordToIpa(token, dialect);
    if (ipa) out += `${ipa} `;
  }
  return out.replace(/ {2,}/g, " ").trim();
}
