"""Deterministic text for training and checking tokenizers: ASCII prose, contractions, punctuation, digits,
white-space runs (spaces, tabs, newlines, CR LF, no-break and ideographic spaces), accented Latin, Greek, Cyrillic,
CJK, kana, Hangul, Arabic, Devanagari (combining marks), emoji (with skin tones and ZWJ sequences) and mixed
scripts. Nothing is downloaded."""

import random

WORDS = (
    "the of and to in is was he for it with as his on be at by had are but from or have an they which one "
    "you were her all she there would their we him been has when who will more no if out so said what up its "
    "about into than them can only other new some could time these two may then do first any my now such like "
    "our over man me even most made after also did many before must through back years where much your way "
    "well down should because each just those people how too little state good very make world still own see "
    "tokenizer model Ember runtime kernel tensor Python GPT Llama Qwen HELLO World CamelCase snake_case "
    "naïve café résumé coöperate façade Ångström jalapeño São Paulo Zürich Øresund Łódź Škoda"
).split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'x", "'"]
PUNCT = list(".,;:!?-()[]{}<>\"'/\\|@#$%^&*_+=~`") + [
    "...",
    "--",
    "—",
    "–",
    "«",
    "»",
    "“",
    "”",
    "‘",
    "’",
    "…",
    "¿",
    "¡",
    "§",
    "©",
    "€",
    "£",
    "¥",
    "→",
    "•",
    "½",
    "²",
    "³",
]
SPACES = [
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " \n",
    "\n ",
    " \t ",
    "\u00a0",
    "\u3000",
    "\u2009",
    "    ",
    "\n\n\n",
    "\t\t",
    " \r\n ",
    "\u2028",
    "\x0b",
    "\x0c",
]
FOREIGN = [
    "Καλημέρα κόσμε",
    "Привет мир",
    "Съешь же ещё этих мягких французских булок",
    "你好，世界",
    "我们的模型很小",
    "東京都",
    "こんにちは世界",
    "カタカナとひらがな",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "हिन्दी भाषा",
    "ภาษาไทย",
    "Tiếng Việt có dấu",
    "עברית",
    "Ελληνικά",
    "Ünïcödé",
    "ﬁne ligature",
    "ＦＵＬＬ　ＷＩＤＴＨ １２３",
    "Ⅻ roman",
    "①②③",
    "٣٤٥ Arabic digits",
    "१२३ Devanagari digits",
]
EMOJI = ["😀", "👍🏽", "👩‍💻", "🇫🇷", "❤️", "🚀🚀", "🤖", "✨", "🧑‍🤝‍🧑", "😂😂😂", "☕", "🎉"]


def _number(rng):
    k = rng.random()
    if k < 0.3:
        return str(rng.randint(0, 9))
    if k < 0.6:
        return str(rng.randint(10, 99999))
    if k < 0.8:
        return f"{rng.uniform(0, 1000):.{rng.randint(1, 4)}f}"
    return str(rng.randint(10**8, 10**15))


def sentence(rng, specials=()):
    parts = []
    for _ in range(rng.randint(1, 14)):
        k = rng.random()
        if k < 0.45:
            w = rng.choice(WORDS)
            if rng.random() < 0.1:
                w = w.upper()
            parts.append(w + (rng.choice(CONTRACTIONS) if rng.random() < 0.1 else ""))
        elif k < 0.55:
            parts.append(rng.choice(PUNCT))
        elif k < 0.65:
            parts.append(_number(rng))
        elif k < 0.75:
            parts.append(rng.choice(FOREIGN))
        elif k < 0.82:
            parts.append(rng.choice(EMOJI))
        elif k < 0.9:
            parts.append(rng.choice(SPACES))
        elif k < 0.95 and specials:
            parts.append(rng.choice(specials))
        else:
            parts.append(rng.choice(WORDS) + rng.choice(PUNCT) + _number(rng))
    out = ""
    for p in parts:
        sep = "" if rng.random() < 0.2 else (rng.choice(SPACES) if rng.random() < 0.15 else " ")
        out += sep + p
    if rng.random() < 0.3:
        out = out.strip()
    return out


def training_corpus(n=4000, seed=1):
    rng = random.Random(seed)
    return [sentence(rng) for _ in range(n)]


def test_strings(n=3000, seed=2, specials=()):
    """n strings to compare: generated sentences, plus fixed edge cases first."""
    fixed = [
        "",
        " ",
        "  ",
        "\n",
        "\t",
        "a",
        " a",
        "a ",
        "  a  b  ",
        "hello world",
        "Hello, World!",
        "don't",
        "DON'T",
        "it's 'S 'RE 'Ve",
        "'s's's",
        "x'sy",
        "1",
        "12",
        "123",
        "1234",
        "12345678901",
        "3.14159",
        "a1b2c3",
        "   \n\n   ",
        "\r\n\r\n",
        "line1\nline2\r\nline3",
        "tab\tseparated\tvalues",
        "end\n",
        "\n start",
        "naïve café",
        "日本語のテキスト",
        "emoji 😀 test 👍🏽",
        "👩‍💻",
        "mixed日本English123",
        "a\u00a0b\u3000c",
        "     leading",
        "trailing     ",
        "!!!???",
        "...",
        "a.b.c",
        "$100.00",
        "x = y + 1;",
        "def f(x):\n    return x * 2\n",
        "<html><body>hi</body></html>",
        "ﬁ",
        "Ⅻ",
        "①",
        "٣",
        "ß ẞ ſ 'ſ",
        "\u2028\u2029",
        "\x0b\x0c",
        "A" * 200,
        " " * 100 + "x",
        "12" * 60,
        "😀" * 20,
    ]
    rng = random.Random(seed)
    out = fixed + [sentence(rng, specials) for _ in range(n - len(fixed))]
    for sp in specials:
        out += [sp, f"a{sp}b", f" {sp} ", f"{sp}{sp}", f"\n{sp}\n", f"x {sp}y", f"{sp[:-1]}", f"{sp}s"]
    return out
