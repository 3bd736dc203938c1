// Package redact is the local personal-data gate and the masking used by every
// write path (DESIGN AM-6). It is made of pure functions: no I/O, no logging,
// no global state. It never returns the values it finds, only their kinds
// (Detect) or the text with the values replaced by typed placeholders (Mask).
//
// # Normalisation
//
// Before detection the text is normalised with Unicode NFKC (so full-width
// "ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ" becomes "ana@example.com") and the invisible
// characters U+200B, U+200C, U+200D, U+2060, U+FEFF and U+00AD (soft hyphen)
// are removed. Detection runs on the normalised text; every span found is
// mapped back to the bytes of the ORIGINAL text, so Mask replaces the right
// span of the original text and leaves everything else byte for byte as it was.
//
// # E-mail (KindEmail)
//
// A local part of letters (any script), digits and ._%+- followed by "@" and a
// domain of at least two labels whose last label is alphabetic with two or more
// letters (or an "xn--" punycode label). Internationalised addresses
// (joão@empresa.com.br, user@bücher.de) are accepted. Spelled-out forms are
// recognised too: "ana at example dot com", "ana [at] example [dot] com",
// "ana (at) example (dot) com", and Portuguese "ana arroba example ponto com"
// (bracketed and bare word forms may be mixed with "@" and "."). For the bare
// word form ("x at y dot com") the first domain label must not be an article
// ("the", "a", "o", ...), so "look at the dot com era" is not an address.
//
// # Brazilian documents (KindCPF, KindCNPJ)
//
// CPF: 11 digits, formatted 529.982.247-25 or bare 52998224725, with valid
// check digits; numbers of one repeated digit (111.111.111-11) are not
// documents. CNPJ: 14 digits, formatted 11.222.333/0001-81 or bare, with valid
// check digits. A run of digits glued to more digits is never a document.
// Documents are recognised whatever word precedes them.
//
// # Phone numbers (KindPhone)
//
// phonenumbers' text matcher is a stub, so candidates are found here: runs of
// digits with the usual phone punctuation (spaces, "-", ".", parentheses, a
// leading "+"), also glued to a word ("suporte(11)91234-5678"). A run is split
// at spaces into chunks and the longest acceptable chunk sequence is tried
// first. The regions tried are Options.DefaultRegion first, then BR, US, GB,
// FR, DE, PT, ES, IN, IT, MX, AR. The rule is privacy-first:
//
//   - International: a candidate starting with "+" is a phone when
//     phonenumbers.IsPossibleNumber accepts it.
//   - Formatted national: a candidate with phone formatting (separators,
//     parentheses or space-separated groups) and 8 to 15 digits is a phone
//     when it is possible AND valid in at least one tried region. Because the
//     list includes open numbering plans (DE), this is close to "possible"
//     for most shapes: "(977) 625-2661" (not valid in US) is refused.
//   - Bare digit runs (no formatting at all) count only with 10 or 11 digits,
//     and only when valid for DefaultRegion (for BR or US when DefaultRegion
//     is empty). Shorter bare runs are treated as ids/amounts; an 11-digit run
//     with valid CPF check digits is a CPF, not a phone.
//   - Seven digits or fewer (without "+") are never a phone: "call 555-0100"
//     is accepted, because local numbers without an area code do not identify
//     a person on their own and the shape collides with extensions, amounts
//     and ids (555-01xx is also the reserved fictional range).
//
// Candidates are excluded (not personal data) when they are:
// preceded by an id word (order, pedido, ticket, form, build, invoice, id,
// protocolo, ref, sku, serial, version, case, chamado, nota, tracking, ...,
// optionally followed by "number"/"no"/"nº"/"do"/"de"/"of") or by "#"; glued
// to an identifier ("eu-20260812-09", "v1.2.3.4", "SKU12345678"); dotted
// versions or IP addresses (groups of at most 3 digits joined by dots, or a
// dot-digit continuation); dates (2026-08-12, 12/08/2026, 12.08.2026); and
// lists of one- and two-digit numbers not starting with a trunk "0"
// ("sizes 36 38 40 42 44"); CPF-shaped numbers with bad check digits
// (999.999.999-99 shape); Brazilian postal codes (01310-100);
// dash- or space-grouped ids made of three or more groups of exactly four
// digits (4412-9981-0033). An id word excludes the whole run of digits that
// follows it.
//
// # Known subjects (KindSubject)
//
// KnownSubjects holds keyed hashes (HMAC-SHA256) of a space's profile names
// and handles, never the clear values. A name matches when its full token
// sequence (1 to 4 words; case folded, accents removed) appears as a word
// sequence in the text: "Crystal Minh" matches "crystal minh" and "CRYSTAL
// MINH" but "Crystal" alone does not. One-word names match only when they have
// at least 4 letters. Names longer than 4 words are stored as their first four
// words and as the pair (first word, last word). A handle matches when the same
// value appears in the text: an e-mail address found in the text (plain or
// spelled out) whose canonical form is a known handle; a phone-shaped run of
// 8 or more digits (or any "+" number) whose digits are a known phone's
// national significant number, possibly after a trunk "0" or a 1-3 digit
// country code (so a known phone is caught even where the phone rule alone
// would not refuse it, also after an id word); a known username appearing as a word; or a known
// document number (bare or formatted). Known spans are masked as "<subject>" and
// reported as KindSubject (plus KindEmail/KindPhone/... when the value is also
// one of those kinds).
package redact
