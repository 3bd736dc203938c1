// Package redact is the local personal-data gate and the masking used by every
// write path (DESIGN AM-6). It is made of pure functions: no I/O, no logging,
// no global state. It never returns the values it finds, only their kinds
// (Detect) or the text with the values replaced by typed placeholders (Mask).
//
// # Normalisation
//
// Before detection the text is normalised in four steps. (0) Escapes are
// decoded: percent-escapes of the characters an address is written with
// ("%40" -> "@", "%2E" -> ".", "%2B", "%2D", "%5F", any case) and of ASCII
// letters ("gm%61il" -> "gmail"; only these, so "40%" and other URL escapes
// stay as they are); HTML character references ending in ";" (numeric
// "&#64;", "&#x40;", "&#97;", or named "&commat;", "&period;", "&lt;",
// ...); and references without ";": numeric ones ("&#64", "&#x40", the
// longest run of their digits that decodes) when they stand for an address
// character, an ASCII letter or a digit, named ones glued to what follows
// ("&commatgmail.com", "&period") only when they stand for an address
// character, so "AT&T", "R&D" and "&copy 2026" stay as they are. (1) Every character
// that renders as nothing is removed: all format characters (Unicode category
// Cf: U+200B–U+200F, the bidi embeddings/overrides U+202A–U+202E and isolates
// U+2066–U+2069, U+2060–U+2064, U+180E, U+061C, U+FEFF, the soft hyphen
// U+00AD, ...), variation selectors and the other default-ignorable code
// points. (2) The rest is NFKC-normalised (full-width
// "ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ" becomes "ana@example.com", mathematical digits
// become 0-9). (3) Every decimal digit of any script (category Nd:
// Arabic-Indic ٠-٩, extended Arabic-Indic, Devanagari, Bengali, ...) becomes
// its ASCII digit, every dash (category Pd) and U+2212 becomes "-", every
// space separator (Zs) becomes " ". Detection runs on the normalised text;
// every span found is mapped back to the bytes of the ORIGINAL text (through
// the removed and mapped characters), so Mask replaces the whole original
// value, whatever it was written with (a decoded escape inside it is
// masked whole), and leaves everything else byte for byte as it was.
//
// # Spaced characters
//
// A value written one character at a time is read without the spaces. A
// spaced run is a sequence of tokens of one character each separated by
// exactly one space (the last may carry trailing punctuation: "... c o m.").
// A run holding "@" with at least 6 tokens ("a n a @ e x a m p l e . c o m")
// is read as one word; elsewhere, a stretch of 10 to 15 single digits in a
// row ("4 1 5 5 5 5 0 1 3 2", "1 1 9 1 2 3 4 5 6 7 8") is read as the number
// without spaces (then the phone and document rules apply as to any bare
// run). A run of 3 or more letters, digits and ". - _" right before or after
// an address word ("at", "dot", "arroba", "ponto", "@", bracketed or not) is
// read as one word too: "tiago at g m a i l dot com", "a n a at gmail dot
// com". Nine or fewer spaced digits, or more than 15, are left to the rules
// for spaced text. Detection runs a second time on a copy of the text with
// those spaces removed, only when the text has such a run, and keeps only
// values that contain a removed space; Mask masks the whole run in the
// original text.
//
// # Cost
//
// Detect and Mask are linear in the text: overlap checks use a bitmap of the
// covered bytes, each e-mail candidate is matched on a window about its own
// size (ending before a second "@", so "a@a@a@..." stays linear), the spaced
// pass runs at most once more over the text, documents are matched by hand at group starts,
// the look back at what introduces a number walks at most 12 words (26 after an
// exemplifier such as "e.g."), and phone verdicts
// (phonenumbers parsing, the expensive step) are remembered per distinct
// digit shape within a call.
//
// # E-mail (KindEmail)
//
// A local part of letters (any script), digits and ._%+- followed by "@" and a
// domain of at least two labels whose last label is alphabetic with two or more
// letters (or an "xn--" punycode label). Internationalised addresses
// (joão@empresa.com.br, user@bücher.de) are accepted. Spelled-out forms are
// recognised too: "ana at example dot com", "ana [at] example [dot] com",
// "ana (at) example (dot) com", "ana {at} example {dot} com",
// "ana <at> example <dot> com", Portuguese "ana arroba example ponto com", and
// spaced symbols "ana @ gmail . com" (a "." with a space before it); bracketed
// and bare word forms may be mixed with "@" and ".". A quoted local part
// ("\"ana smith\"@example.com", at most 64 bytes, on one line) makes an
// address too, masked quotes included.
//
// A bare word "at"/"arroba" (not bracketed) makes an address only when the
// domain does not start with an article ("the", "a", "o", ...), the word
// before "at" is not a common prose word ("in", "log", "sign", "hosted",
// "deployed", ...), and the domain is one of: a well-known mailbox provider's
// (first label gmail, googlemail, hotmail, outlook, live, msn, yahoo, icloud,
// aol, proton, protonmail, gmx, yandex, zoho, uol, bol, terra, ig, globo,
// sapo, libero, orange, qq, naver, ...: "ana at gmail.com"); spelled out
// ("ana at example dot com"); or a country domain without subdomain: a name
// and a two-letter country code, with at most a generic second level between
// them ("ana at empresa.pt", "ana at empresa.com.br"), vanity codes used as
// generic names (io, ai, co, me, tv, sh, gg, ly, ...) excluded. So "deployed
// at api.example.com", "the API at api.acme.com.br" (a subdomain), "hosted at
// fly.io" and "look at the dot com era" are not addresses.
//
// A local part glued to "@" and a mailbox provider's name without top-level
// domain is an address too: "ana@gmail" (but "user@localhost" is not).
//
// Host specifications are not addresses (unless the domain is a mailbox
// provider's): scp-style "user@host:path" (the address shape followed by ":"
// and a path or port character, as in "git@github.com:acme/tools.git") and
// the user information of a URL ("ssh://git@github.com/acme"). An address
// followed by ": " (colon and space) is still an address.
//
// # Brazilian documents (KindCPF, KindCNPJ)
//
// CPF: 11 digits grouped 3-3-3-2, with valid check digits; numbers of one
// repeated digit (111.111.111-11) are not documents. CNPJ: 14 digits grouped
// 2-3-3-4-2, with valid check digits. Between groups there may be one
// separator of ". - /" or a space, whatever the position, or none:
// 529.982.247-25, 529.982.247.25, 529 982 247 25, 52998224725,
// 11.222.333/0001-81, 11-222-333-0001-81, 11 222 333 0001 81. Every start of
// a group of digits is tried, so a document after other digits ("555 529 982
// 247 25") is found, and the whole number is masked. A run of digits glued to
// more digits is never a document. Documents are recognised whatever word
// precedes them, and before phones, with one exception: a bare run (digits
// only) right after an order, ticket, invoice, protocol, tracking or batch
// word (pedido, chamado, nota, fatura, rastreio, lote, ...; fillers, "#"
// and list connectors aside, no other word between) is an id whose digits
// happen to pass the check ("pedido 52998224725"); "id", "code" or
// "cliente" before it, or any formatting (529.982.247-25), keep it a CPF.
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
//   - Bare digit runs (no formatting at all) count with 10 or 11 digits when
//     valid for DefaultRegion (for BR or US when DefaultRegion is empty).
//     Shorter bare runs are treated as ids/amounts; an 11-digit run with
//     valid CPF check digits is a CPF, not a phone.
//   - A country code written without "+": a bare run of 12 or 13 digits, or
//     a formatted candidate of 11 or more digits, not starting with "0", is a
//     phone when it is a valid number read with a leading "+"
//     ("5511912345678", "55 11 91234 5678").
//   - Company service lines are not personal data: a number whose type, in
//     the first tried region where it is valid (or, with "+", in its
//     country), is toll-free, shared-cost, premium-rate or universal access
//     ("0800 123 4567", "0300 123 4567", "1-800-555-0100", "888 555 0100")
//     is accepted, left unmasked, and its digits are not tried again as a
//     shorter number. A known subject's number is still flagged. In a region
//     whose trunk prefix is "0" a service type counts only when the number
//     is written with that "0": "(303) 630-6430" is not the Brazilian
//     shared-cost line 0303 630 6430 but a US phone.
//   - Seven digits or fewer (without "+") are never a phone: "call 555-0100"
//     is accepted, because local numbers without an area code do not identify
//     a person on their own and the shape collides with extensions, amounts
//     and ids (555-01xx is also the reserved fictional range).
//
// Candidates are excluded (not personal data) when they are introduced as
// an id: walking back from the number within its sentence (a ";", "!", "?",
// new line or a "." after a word that is not an abbreviation ends it), an
// id word (order, pedido, ticket, form, build, invoice, id, protocolo, ref,
// sku, serial, version, case, chamado, nota, tracking, rastreio, batch,
// lote, range, port(s), faixa, intervalo, epoch, timestamp, unix, ts, ...)
// or a "#" comes before any contact word (phone, tel, telefone, fone, cel,
// celular, mobile, whats, whatsapp, zap, ph, call, ligar, contact, contato,
// customer, cliente, buyer, comprador, his, her, dele, dela, ...), with at
// most one other word between them besides fillers ("number", "nº", "do",
// "de", "of", "is", "the"), list connectors ("and", "e", "or", ",") and
// other numbers: "Protocolo de atendimento 4159977512", "the tracking
// number is 2123460821", "Orders 4154327323 and 6355444157" pass, while
// "Ticket 88213: customer 2125550143" and "Order 4471 delayed; call
// 2125550143" are phones. A number given as an example of an id is one too:
// right after an exemplifier ("e.g.", "i.e.", "for example", "for
// instance", "such as", "like", "por exemplo", "ex.", "p. ex.", "tipo",
// "como"), an id word anywhere in the 24 words before it, in its sentence or
// the one before, with no contact word among them ("Order ids have ten
// digits, e.g. 4159977512", "Ticket ids look like this. E.g. 2125550143");
// "area code", "country code" are not id words there, so "Mobile numbers
// need the area code, e.g. 4155550167" is a phone. Also excluded: runs glued to an identifier
// ("eu-20260812-09", "v1.2.3.4", "SKU12345678") unless the word glued to
// the number is a contact word ("tel.11987654321", "fone-2125550143",
// "whats.(85)99914-5187", "Ph.+1 312 282 8967" are phones); dotted
// versions or IP addresses (groups of at most 3 digits joined by dots, or a
// dot-digit continuation); dates (2026-08-12, 12/08/2026, 12.08.2026); and
// lists of one- and two-digit numbers not starting with a trunk "0"
// ("sizes 36 38 40 42 44"); CPF-shaped numbers with bad check digits
// (999.999.999-99 shape); Brazilian postal codes (01310-100); decimal
// amounts ("1234567.89": digits, ".", one or two digits); ranges of years
// ("2019-2023");
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
//
// # Several fields
//
// A value split across fields ("Customer ana@" in a title, "example.com is
// the right mailbox" in the body) is only visible when the fields are read
// together: JoinForCheck(title, body, tags) gives the text to pass to Detect,
// each field on its own line plus all of them concatenated without
// separator. JoinTagsForCheck(tags) adds the joins of adjacent tags that
// really form an address (tags cannot hold "@"): a tag and the next one when
// that one is a dotted domain (["ana", "gmail.com"], ["ana.silva",
// "example.com.br"]: two or more labels ending in a two-letter country code
// or a mail top-level domain such as com, net, org, info; not "v2.14.3",
// "app.yaml", "readme.md", "api.prod" or "com.br" alone), and three adjacent
// tags ending in a generic top-level domain as "a@b.c" (["ana", "example",
// "com"]). A bare word after another tag is never a domain, so a mailbox
// provider's name without its top-level domain is an ordinary tag:
// ["deploy", "live"], ["handoff", "pm"], ["refund", "gmail"] and ["w1",
// "r7"] pass (the "ana@gmail" rule above is for text, where the "@" is
// written). A bare domain tag right after another tag (["billing",
// "stripe.com"]) is refused. Tags are also read joined by spaces, as text,
// so a spelled-out address (["ana", "at", "gmail", "dot", "com"]), a phone
// (["ligar", "11", "98765-4321"]) or a document in tags is found by the
// rules for text, exceptions included: a tag that is an id word introduces
// the number in the next tag (["invoice", "48-97997-0547"] passes, as
// "Invoice 48-97997-0547" does). NoteText(title, body, tags) is the whole text;
// the
// notes gate (AM-6) checks notes this way.
//
// # Instructions and fences
//
// DetectInstructions (GATE-3, MS-7) finds text that tries to act on the agent reading it:
// override, privilege, exfiltration and invisible (see InstructionClass), over
// InstructionText(title, body, tags), after its own normalisation (look-alikes, letter
// spacing, leetspeak). It returns classes, never text. Fence reads a prompt block's fence
// tags after normalisation and escapes them. docs/gate.md lists what each finds, the
// measured figures and the known misses.
package redact
