# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""blockml's loops in C (tokenmill.extract.blockml keeps their Python, which gives the same results):

- blocks_of: the same walk over lexbor's DOM, reading the nodes' structs (selectolax 1.0.2's
  lexbor) instead of making a LexborNode, a tag string and an attribute dict per node;
- text_rows: TEXT_FEATURES of each block's text (blockml._text_rows), bit for bit;
- forest_log_odds: a forest's log-odds (tokenmill.extract.gbdt.Forest.log_odds), bit for bit.

Use: ``configure(tokenmill.extract.blockml)`` once (it reads SKIPPED, BLOCKS, CELLS, HEADINGS,
_ENCLOSING_BIT, CELL, CONTAINER_LEVELS, class_groups, _HIDDEN_STYLE and Block from it, checks
the selectolax it runs against, and compares the walk and text_rows with blockml's on a test
page), then ``blocks_of(parser.body)`` (or ``blocks_of(parser)``).
"""

from cpython.bytearray cimport PyByteArray_FromStringAndSize, PyByteArray_AS_STRING
from cpython.ref cimport PyObject, Py_INCREF
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_AsUTF8AndSize, PyUnicode_Substring
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport uintptr_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcmp, memcpy, memchr

from selectolax.lexbor cimport LexborNode, LexborHTMLParser, lxb_dom_node_t, lxb_dom_attr_t, lxb_char_t

cdef extern from "_blockml_lxb.h" nogil:
    uintptr_t BW_TAG_LAST_ENTRY
    const char *LEXBOR_VERSION_STRING
    const lxb_char_t *bw_tag_name_by_id(uintptr_t id, size_t *len)
    uintptr_t bw_element_qualified_id(const lxb_dom_node_t *node)
    const lxb_char_t *bw_element_qualified_name(const lxb_dom_node_t *node, size_t *len)
    lxb_dom_attr_t *bw_first_attr(const lxb_dom_node_t *node)
    lxb_dom_attr_t *bw_next_attr(const lxb_dom_attr_t *attr)
    const lxb_char_t *bw_attr_qualified_name(const lxb_dom_attr_t *attr, size_t *len)
    const lxb_char_t *bw_attr_value(const lxb_dom_attr_t *attr, size_t *len)
    const lxb_char_t *bw_text_data(const lxb_dom_node_t *node, size_t *len)
    bint bw_utf8_valid(const unsigned char *p, size_t n)
    size_t bw_collapse(const unsigned char *src, size_t n, unsigned char *dst)
    size_t bw_collapse_cells(const unsigned char *src, size_t n, unsigned char cell, unsigned char *dst)
    size_t bw_stripped_chars(const unsigned char *src, size_t n)
    uint64_t bw_hash(const unsigned char *p, size_t n)

SELECTOLAX_VERSION = "1.0.2"  # the sdist whose lexbor headers this module was compiled against
LEXBOR_VERSION = LEXBOR_VERSION_STRING.decode()

cdef enum:
    NODE_ELEMENT = 1
    NODE_TEXT = 3
    TAG_TEXT = 2  # LXB_TAG__TEXT .. LXB_TAG__EM_DOCTYPE: selectolax's _TAG_TO_NAME
    TAG_DOCUMENT = 3
    TAG_COMMENT = 4
    TAG_DOCTYPE = 5

# what blocks_of does with a tag (flags of a TagInfo)
cdef enum:
    F_TEXT = 1    # "-text"
    F_SKIP = 2    # SKIPPED, a name starting with "-", None (a processing instruction) or ""
    F_BR = 4
    F_CELL = 8
    F_BLOCK = 16
    F_LINK = 32   # "a"

cdef struct TagInfo:
    int flags
    long bit  # _ENCLOSING_BIT of the tag (or of "heading")
    PyObject *name  # the tag string (a reference held by _tag_names / _slow_tags)

cdef struct Context:  # blocks_of's context tuple
    long enclosing
    long ancestor_classes
    long own_classes
    Py_ssize_t depth
    bint in_link
    PyObject *tag  # the block's tag (borrowed: held by _tag_names, _slow_tags or the walk's keep)

cdef struct Frame:  # an element whose children are being walked
    Context inner
    bint block

cdef TagInfo _table[512]  # by tag id below LXB_TAG__LAST_ENTRY, for elements without a qualified name
cdef list _tag_names = []
cdef dict _slow_tags = {}  # other tag strings -> (flags, bit)
cdef object _SKIPPED = None, _BLOCKS = None, _CELLS = None, _HEADINGS = None, _ENCLOSING_BIT = None
cdef object _CELL = None, _class_groups = None, _hidden_search = None, _Block = None, _python_blocks_of = None
cdef Py_ssize_t _container_levels = 3
cdef bint _configured = False
cdef object _tuple_new = tuple.__new__
cdef bint _block_is_namedtuple = False
cdef unsigned char _cell_byte = 9


# ---- a C cache of class_groups and of the style test, keyed on the attributes' bytes (what is decoded
# from them is a function of them, and both functions are pure), so that a repeated class string costs
# a hash and a memcmp instead of three decodes and an lru_cache lookup
cdef struct CacheEntry:
    uint64_t hash
    unsigned char *key  # NULL: an empty slot
    size_t length
    long value

cdef enum:
    CACHE_SLOTS = 16384  # a power of two; cleared when half full
cdef CacheEntry *_cache = <CacheEntry *> calloc(CACHE_SLOTS, sizeof(CacheEntry))
cdef size_t _cache_count = 0
cdef unsigned char *_key = NULL  # the key being looked up
cdef size_t _key_length = 0, _key_size = 0


cdef void _cache_clear() noexcept:
    global _cache_count
    cdef size_t index
    for index in range(CACHE_SLOTS):
        if _cache[index].key != NULL:
            free(_cache[index].key)
            _cache[index].key = NULL
    _cache_count = 0


cdef int _key_reserve(size_t more) except -1:
    global _key, _key_size
    cdef size_t size
    cdef unsigned char *grown
    if _key_length + more > _key_size:
        size = max(_key_size * 2, _key_length + more, 256)
        grown = <unsigned char *> realloc(_key, size)
        if grown == NULL:
            raise MemoryError()
        _key, _key_size = grown, size
    return 0


cdef int _key_add(const lxb_char_t *data, size_t length, bint present) except -1:
    """One attribute value in the key: presence (a value, even empty, or None), length, bytes."""
    global _key_length
    _key_reserve(1 + sizeof(size_t) + length)
    if not present or data == NULL:
        _key[_key_length] = 0
        _key_length += 1
        return 0
    _key[_key_length] = 1
    memcpy(&_key[_key_length + 1], &length, sizeof(size_t))
    if length:
        memcpy(&_key[_key_length + 1 + sizeof(size_t)], data, length)
    _key_length += 1 + sizeof(size_t) + length
    return 0


cdef inline CacheEntry *_cache_find(uint64_t hash) noexcept:
    """The slot of _key: the entry holding it, or the empty slot where it goes."""
    cdef size_t index = <size_t> hash & (CACHE_SLOTS - 1)
    cdef CacheEntry *entry
    while True:
        entry = &_cache[index]
        if entry.key == NULL or (entry.hash == hash and entry.length == _key_length
                                 and memcmp(entry.key, _key, _key_length) == 0):
            return entry
        index = (index + 1) & (CACHE_SLOTS - 1)


cdef int _cache_store(CacheEntry *entry, uint64_t hash, long value) except -1:
    global _cache_count
    cdef unsigned char *key
    if _cache_count >= CACHE_SLOTS // 2:
        _cache_clear()
        entry = _cache_find(hash)
    key = <unsigned char *> malloc(_key_length if _key_length else 1)
    if key == NULL:
        raise MemoryError()
    memcpy(key, _key, _key_length)
    entry.key, entry.hash, entry.length, entry.value = key, hash, _key_length, value
    _cache_count += 1
    return 0


cdef tuple _tag_flags(tag):
    """(flags, bit) of a tag string as blocks_of reads it."""
    cdef int flags = 0
    if tag == "-text":
        return (F_TEXT, 0)
    if tag is None or len(tag) == 0 or tag[0] == "-" or tag in _SKIPPED:
        return (F_SKIP, 0)
    if tag == "br":
        flags |= F_BR
    if tag in _CELLS:
        flags |= F_CELL
    if tag in _BLOCKS:
        flags |= F_BLOCK
    if tag == "a":
        flags |= F_LINK
    return (flags, _ENCLOSING_BIT.get("heading" if tag in _HEADINGS else tag, 0))


cdef inline str _decode(const lxb_char_t *data, size_t length):
    return PyUnicode_DecodeUTF8(<const char *> data, length, "replace")


# ---- class_groups in C for ASCII attribute values: CLASS_WORDS' alternatives tried as Python's
# re tries them (at each position, in the pattern's order, the first that matches is taken and the
# search goes on after it), each a literal, a literal then \b, or a literal then s?\b
cdef enum:
    WORD_PLAIN = 0
    WORD_BOUNDARY = 1  # literal\b
    WORD_PLURAL = 2  # literals?\b
    MAX_CLASS_WORDS = 256
    MAX_WORD_LENGTH = 32

cdef struct ClassWord:
    unsigned char text[MAX_WORD_LENGTH]
    size_t length
    int group
    int kind

cdef ClassWord _class_words[MAX_CLASS_WORDS]
cdef int _bucket_start[257]  # the words beginning with byte b: _class_words[_bucket_start[b]:_bucket_start[b + 1]]
cdef bint _class_words_compiled = False


cdef inline bint _ascii_word(unsigned char c) noexcept:  # re's \w on an ASCII character
    return (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or (c >= 48 and c <= 57) or c == 95


cdef inline unsigned char _ascii_lower(unsigned char c) noexcept:
    return c + 32 if c >= 65 and c <= 90 else c


cdef inline bint _boundary(const unsigned char *s, size_t n, size_t at) noexcept:
    """re's \b between s[at - 1] and s[at] (at > 0)."""
    return _ascii_word(s[at - 1]) != (at < n and _ascii_word(s[at]))


cdef inline bint _literal_at(const unsigned char *s, size_t n, size_t at, const ClassWord *word) noexcept:
    cdef size_t k
    if at + word.length > n:
        return False
    for k in range(word.length):
        if _ascii_lower(s[at + k]) != word.text[k]:
            return False
    return True


cdef long _ascii_class_groups(const unsigned char *s, size_t n) noexcept:
    """class_groups' bits of one ASCII value (lowered as it is read)."""
    cdef long bits = 0
    cdef size_t at = 0, end
    cdef int index, first
    cdef const ClassWord *word
    while at < n:
        first = _ascii_lower(s[at])
        end = 0
        for index in range(_bucket_start[first], _bucket_start[first + 1]):
            word = &_class_words[index]
            if not _literal_at(s, n, at, word):
                continue
            end = at + word.length
            if word.kind == WORD_PLURAL:
                if end < n and _ascii_lower(s[end]) == 115 and _boundary(s, n, end + 1):  # "s"
                    end += 1
                elif not _boundary(s, n, end):
                    end = 0
            elif word.kind == WORD_BOUNDARY and not _boundary(s, n, end):
                end = 0
            if end:
                bits |= 1L << word.group
                break
        at = end if end else at + 1
    return bits


cdef bint _is_ascii(const unsigned char *s, size_t n) noexcept:
    cdef size_t k
    for k in range(n):
        if s[k] >= 0x80:
            return False
    return True


def _compile_class_words(dict class_words):
    """The C table of CLASS_WORDS (group -> "word|word|..."); False, leaving class_groups to Python,
    where an alternative is not a lower-case literal optionally followed by \b or s?\b."""
    global _class_words_compiled
    import re
    _class_words_compiled = False
    words = []
    for group, (name, pattern) in enumerate(class_words.items()):
        for alternative in pattern.split("|"):
            shape = re.fullmatch(r"([a-z0-9_-]+)(s\?\\b|\\b)?", alternative)
            if shape is None or len(shape.group(1)) >= MAX_WORD_LENGTH:
                return False
            kind = {None: WORD_PLAIN, "\\b": WORD_BOUNDARY, "s?\\b": WORD_PLURAL}[shape.group(2)]
            words.append((shape.group(1).encode("ascii"), group, kind))
    if len(words) > MAX_CLASS_WORDS or len(class_words) > 62:
        return False
    words.sort(key=lambda word: word[0][0])  # stable: the pattern's order within each first byte
    cdef int index, byte
    for index, (text, group, kind) in enumerate(words):
        memcpy(_class_words[index].text, <const char *> text, len(text))
        _class_words[index].length, _class_words[index].group, _class_words[index].kind = len(text), group, kind
    index = 0
    for byte in range(257):
        while index < len(words) and words[index][0][0] < byte:
            index += 1
        _bucket_start[byte] = index
    _class_words_compiled = True
    return True


def class_groups_of(class_, id_, role):
    """blockml.class_groups(class_, id_, role) as the walk computes it (in C where the values are ASCII)."""
    cdef long bits = 0
    cdef bytes encoded
    if not _class_words_compiled or not all(value is None or value.isascii() for value in (class_, id_, role)):
        return _class_groups(class_, id_, role)
    for value in (class_, id_, role):
        if value is not None:
            encoded = value.encode("ascii")
            bits |= _ascii_class_groups(encoded, len(encoded))
    return bits


def configure(blockml):
    """Read blocks_of's constants and helpers from the tokenmill.extract.blockml module, and check
    the selectolax this process runs."""
    global _SKIPPED, _BLOCKS, _CELLS, _HEADINGS, _ENCLOSING_BIT, _CELL, _class_groups, _hidden_search, _Block
    global _python_blocks_of, _container_levels, _configured
    if _cache == NULL:
        raise MemoryError()
    import selectolax
    import selectolax.lexbor as lexbor_module
    running = (selectolax.__version__, "%d.%d" % (lexbor_module.LEXBOR_VERSION_MAJOR, lexbor_module.LEXBOR_VERSION_MINOR))
    if running[0] != SELECTOLAX_VERSION or not LEXBOR_VERSION.startswith(running[1] + "."):
        raise ImportError(f"_blockml was compiled for selectolax {SELECTOLAX_VERSION} (lexbor {LEXBOR_VERSION}), "
                          f"this process runs selectolax {running[0]} (lexbor {running[1]})")
    _SKIPPED, _BLOCKS, _CELLS, _HEADINGS = (frozenset(blockml.SKIPPED), frozenset(blockml.BLOCKS),
                                            frozenset(blockml.CELLS), frozenset(blockml.HEADINGS))
    _ENCLOSING_BIT = dict(blockml._ENCLOSING_BIT)
    _CELL = blockml.CELL
    if not isinstance(_CELL, str) or len(_CELL) != 1 or ord(_CELL) >= 0x80:
        raise ValueError("_blockml needs CELL to be one ASCII character")
    global _cell_byte
    _cell_byte = ord(_CELL)
    check_whitespace()
    _cache_clear()
    _container_levels = blockml.CONTAINER_LEVELS
    _class_groups = blockml.class_groups
    _compile_class_words(dict(blockml.CLASS_WORDS))
    _hidden_search = blockml._HIDDEN_STYLE.search
    _Block = blockml.Block
    global _block_is_namedtuple
    # a typing.NamedTuple / collections.namedtuple of the 8 fields, whose __new__ is namedtuple's own
    _block_is_namedtuple = (isinstance(_Block, type) and issubclass(_Block, tuple)
                            and getattr(_Block, "_fields", None) == ("text", "link_chars", "enclosing",
                                                                     "ancestor_classes", "own_classes", "depth",
                                                                     "tag", "containers")
                            and getattr(_Block.__new__, "__module__", "").startswith("namedtuple_")
                            and _Block(*range(8)) == tuple(range(8)))
    _python_blocks_of = blockml.blocks_of
    _configure_matrix(blockml)
    _slow_tags.clear()
    del _tag_names[:]
    cdef size_t length
    cdef const lxb_char_t *data
    cdef uintptr_t tag_id
    if BW_TAG_LAST_ENTRY > 512:
        raise ImportError("lexbor has more predefined tags than _blockml's table holds")
    for tag_id in range(BW_TAG_LAST_ENTRY):
        if tag_id == TAG_TEXT:
            name = "-text"
        elif tag_id == TAG_DOCUMENT:
            name = "-document"
        elif tag_id == TAG_COMMENT:
            name = "-comment"
        elif tag_id == TAG_DOCTYPE:
            name = "-doctype"
        else:
            data = bw_tag_name_by_id(tag_id, &length)
            name = _decode(data, length) if data != NULL else None
        flags, bit = _tag_flags(name)
        _tag_names.append(name)
        _table[tag_id].flags = flags
        _table[tag_id].bit = bit
        _table[tag_id].name = <PyObject *> name
    _configured = True
    _self_test(blockml)


_SELF_TEST = ("<html><body class=post-content><nav id=menu><ul><li><a href=/>Home</a></li></ul></nav>"
              "<div class='entry'><p>Caf\u00e9 <a href=x>link <b>text</b></a>\u00a0 tail<br>next</p>"
              "<p hidden>h</p><p aria-hidden=true>h</p><p style='display: none'>h</p><p style='color:red'>shown</p>"
              "<table><tr><td>a</td><td></td><td> b  c </td></tr></table><my-el role=complementary>custom</my-el>"
              "<script>x</script><!-- c --><math><section>m</section></math><h2>title</h2></div>end</body></html>")


def _self_test(blockml):
    """The compiled walk and blockml's agree on a small page (a layout that does not match the running
    selectolax would show here, if the version check let it through), and text_rows and blockml's
    _text_rows on every character of blockml's punctuation, separator and sentence-end classes,
    the edges of its CJK ranges and the words whose lowering or case is special (the classes are
    written out in C below: an edit of blockml's would show here)."""
    global _configured
    import numpy
    from selectolax.lexbor import LexborHTMLParser
    for html in (_SELF_TEST, _SELF_TEST.encode("utf-8").replace(b"Caf", b"C\xffaf")):
        body = LexborHTMLParser(html).body
        blocks = blocks_of(body)
        if blocks != _python_blocks_of(body) or not blocks:
            _configured = False
            raise ImportError("_blockml.blocks_of disagrees with blockml.blocks_of: rebuild it for this selectolax")
        texts = [blockml.row_text(block.text) for block in blocks]
        columns = numpy.array(blockml._text_rows(texts, frozenset({"the"})), dtype=numpy.float64)
        matrix = numpy.empty((len(blocks), len(blockml.FEATURES)))
        page_rows(blocks, texts, columns, matrix)
        matrix[:, blockml.FEATURES.index("page_stopword_share")] = 0.0
        if matrix.tobytes() != blockml._python_page_matrix(blocks, texts, columns).tobytes():
            _configured = False
            raise ImportError("_blockml.page_rows disagrees with blockml.page_matrix: rebuild it from this blockml")
    words = [word for pattern in blockml.CLASS_WORDS.values()
             for word in pattern.replace("s?\\b", "").replace("\\b", "").split("|")]
    for value in words + [f"x{word}s-{word}_{word.upper()}1 ads tags-ad-ad ad" for word in words]:
        if class_groups_of(value, value[::-1], None) != blockml.class_groups.__wrapped__(value, value[::-1], None):
            _configured = False
            raise ImportError("_blockml's class words disagree with blockml.class_groups: rebuild it from this blockml")
    special = (set(blockml._PUNCTUATION.pattern) | set(blockml._SEPARATORS.pattern) | set(blockml._SENTENCE_END)
               | {chr(code) for edge in (0x3040, 0x30ff, 0x3400, 0x9fff, 0xac00, 0xd7af) for code in (edge - 1, edge, edge + 1)})
    texts = [f"w{char}x {char} The{char}" for char in sorted(special)]
    texts += ["\u0130stanbul \u03a3\u0391\u03a3 STRASSE stra\u00dfe \u00b2 \u0663 \u01c5 $x$ $$ the OF \u00a0of\u2003the",
              "a $ b $", "| x | y |", "\u4e2d\u6587\u3002"]
    words = frozenset({"the", "of", "stra\u00dfe", "i\u0307stanbul", "\u03c3\u03b1\u03c2"})
    import numpy
    if bytes(text_rows(texts, words)) != numpy.array(blockml._text_rows(texts, words), dtype=numpy.float64).tobytes():
        _configured = False
        raise ImportError("_blockml.text_rows disagrees with blockml._text_rows: rebuild it from this blockml")


_SPACES = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002,
           0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)


def check_whitespace(bint full=False):
    """bw_space_at knows str.isspace (what str.split and str.strip split on) by heart: check that it
    collapses as this Python's " ".join(text.split()) does, on the 29 spaces and their neighbours, or
    (full) on every code point (a third of a second)."""
    if full:
        codes = [code for code in range(0x110000) if not 0xD800 <= code < 0xE000]
        if [code for code in codes if chr(code).isspace()] != list(_SPACES):
            raise ImportError("this Python's whitespace is not _blockml's")
    else:
        codes = sorted({near for code in _SPACES + (0x80, 0x800, 0x10000, 0x10FFFF, 0xFFFD)
                        for near in range(max(0, code - 2), min(0x110000, code + 3)) if not 0xD800 <= near < 0xE000})
    text = "".join(" x" + chr(code) + "y" for code in codes) + chr(0x3000)
    cdef bytes encoded = text.encode()
    cdef unsigned char *out = <unsigned char *> malloc(len(encoded) + 1)
    if out == NULL:
        raise MemoryError()
    try:
        collapsed = (<bytes> out[:bw_collapse(<const unsigned char *> encoded, len(encoded), out)]).decode()
        stripped = bw_stripped_chars(<const unsigned char *> encoded, len(encoded))
    finally:
        free(out)
    if collapsed != " ".join(text.split()) or stripped != len(text.strip()):
        raise ImportError("_blockml's whitespace table does not match this Python's str.split")


cdef int _slow_info(lxb_dom_node_t *node, TagInfo *info, list keep) except -1:
    """selectolax's LexborNode.tag of a node outside the table (a custom element, an element with a
    qualified name, a node that is no element: None, a processing instruction such as "<?php ... ?>"),
    and what blocks_of does with it."""
    cdef size_t length = 0
    cdef const lxb_char_t *data
    if node.local_name == TAG_TEXT or node.local_name == TAG_DOCUMENT or node.local_name == TAG_COMMENT \
            or node.local_name == TAG_DOCTYPE:
        info[0] = _table[node.local_name]
        return 0
    if node.type != NODE_ELEMENT:
        tag = None
    else:
        data = bw_element_qualified_name(node, &length)
        tag = _decode(data, length) if data != NULL else None
    cached = _slow_tags.get(tag)
    if cached is None:
        cached = (tag,) + _tag_flags(tag)
        if len(_slow_tags) < 4096:  # entries stay (contexts borrow their strings) until configure()
            _slow_tags[tag] = cached
        else:
            keep.append(cached)  # held for the walk
    info.name = <PyObject *> (<tuple> cached)[0]
    info.flags = (<tuple> cached)[1]
    info.bit = (<tuple> cached)[2]
    return 0


cdef inline bint _name_is(const lxb_char_t *name, size_t length, const char *expected, size_t expected_length):
    return length == expected_length and memcmp(name, expected, length) == 0


cdef class _Walk:
    cdef list blocks
    cdef list keep  # tag strings this walk's contexts borrow that _slow_tags does not hold
    cdef unsigned char *text  # the pieces of blocks_of, joined: well-formed UTF-8
    cdef size_t text_length, text_size
    cdef unsigned char *out  # a flush's collapsed text
    cdef size_t out_size
    cdef Py_ssize_t link_chars
    cdef Context *open_blocks
    cdef Py_ssize_t open_top, open_size
    cdef Py_ssize_t *serials
    cdef Py_ssize_t serial
    cdef Frame *frames
    cdef Py_ssize_t frame_size

    def __cinit__(self):
        self.blocks = []
        self.keep = []
        self.open_size = 64
        self.frame_size = 64
        self.text_size = 4096
        self.out_size = 4096
        self.open_blocks = <Context *> malloc(self.open_size * sizeof(Context))
        self.serials = <Py_ssize_t *> malloc(self.open_size * sizeof(Py_ssize_t))
        self.frames = <Frame *> malloc(self.frame_size * sizeof(Frame))
        self.text = <unsigned char *> malloc(self.text_size)
        self.out = <unsigned char *> malloc(self.out_size)
        if self.open_blocks == NULL or self.serials == NULL or self.frames == NULL or self.text == NULL \
                or self.out == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.open_blocks)
        free(self.serials)
        free(self.frames)
        free(self.text)
        free(self.out)

    cdef int push_block(self, Context *inner) except -1:
        cdef Py_ssize_t size
        if self.open_top + 1 >= self.open_size:
            size = self.open_size * 2
            blocks = <Context *> realloc(self.open_blocks, size * sizeof(Context))
            if blocks == NULL:
                raise MemoryError()
            self.open_blocks = blocks
            serials = <Py_ssize_t *> realloc(self.serials, size * sizeof(Py_ssize_t))
            if serials == NULL:
                raise MemoryError()
            self.serials = serials
            self.open_size = size
        self.open_top += 1
        self.open_blocks[self.open_top] = inner[0]
        self.serial += 1
        self.serials[self.open_top] = self.serial
        return 0

    cdef int grow_frames(self) except -1:
        cdef Py_ssize_t size = self.frame_size * 2
        frames = <Frame *> realloc(self.frames, size * sizeof(Frame))
        if frames == NULL:
            raise MemoryError()
        self.frames = frames
        self.frame_size = size
        return 0

    cdef int append(self, const unsigned char *data, size_t length) except -1:
        cdef size_t size
        cdef unsigned char *grown
        if self.text_length + length > self.text_size:
            size = max(self.text_size * 2, self.text_length + length)
            grown = <unsigned char *> realloc(self.text, size)
            if grown == NULL:
                raise MemoryError()
            self.text, self.text_size = grown, size
        memcpy(self.text + self.text_length, data, length)
        self.text_length += length
        return 0

    cdef int append_text(self, const lxb_char_t *data, size_t length, bint in_link) except -1:
        """A text node's text: its bytes when they are well-formed UTF-8, else (as selectolax decodes
        each node's text with errors="replace") the UTF-8 of its decoding."""
        cdef Py_ssize_t size
        cdef const char *encoded
        cdef size_t start = self.text_length
        if bw_utf8_valid(data, length):
            self.append(data, length)
        else:
            decoded = PyUnicode_DecodeUTF8(<const char *> data, length, "replace")
            encoded = PyUnicode_AsUTF8AndSize(decoded, &size)
            self.append(<const unsigned char *> encoded, size)
        if in_link:
            self.link_chars += bw_stripped_chars(self.text + start, self.text_length - start)
        return 0

    cdef int flush(self, Context *context) except -1:
        cdef size_t length
        cdef Py_ssize_t first, index, count
        cdef unsigned char *grown
        cdef object serial
        if self.out_size < self.text_length:
            grown = <unsigned char *> realloc(self.out, self.text_length)
            if grown == NULL:
                raise MemoryError()
            self.out, self.out_size = grown, self.text_length
        if memchr(self.text, _cell_byte, self.text_length) == NULL:
            length = bw_collapse(self.text, self.text_length, self.out)
        else:
            length = bw_collapse_cells(self.text, self.text_length, _cell_byte, self.out)
        if length:
            text = PyUnicode_DecodeUTF8(<const char *> self.out, length, "strict")
            first = self.open_top + 1 - (_container_levels + 1)
            if first < 0:
                first = 0
            count = self.open_top + 1 - first
            containers = PyTuple_New(count)
            for index in range(count):
                serial = self.serials[first + index]
                Py_INCREF(serial)
                PyTuple_SET_ITEM(containers, index, serial)
            fields = (text, self.link_chars, context.enclosing, context.ancestor_classes, context.own_classes,
                      context.depth, <object> context.tag, containers)
            # what Block(*fields) does (namedtuple's __new__), without running its Python frame
            self.blocks.append(_tuple_new(_Block, fields) if _block_is_namedtuple else _Block(*fields))
        self.text_length = 0
        self.link_chars = 0
        return 0

    cdef int end_block(self, Context *inner) except -1:
        if self.text_length:
            self.flush(inner)
        self.open_top -= 1
        return 0

    cdef uint64_t class_key(self, bint has_class, const lxb_char_t *class_value, size_t class_length,
                            bint has_id, const lxb_char_t *id_value, size_t id_length,
                            bint has_role, const lxb_char_t *role_value, size_t role_length) except? 0:
        global _key_length
        _key_length = 0
        _key_reserve(1)
        _key[0] = 67  # "C"
        _key_length = 1
        _key_add(class_value, class_length, has_class)
        _key_add(id_value, id_length, has_id)
        _key_add(role_value, role_length, has_role)
        return bw_hash(_key, _key_length)

    cdef long class_bits(self, bint has_class, const lxb_char_t *class_value, size_t class_length,
                         bint has_id, const lxb_char_t *id_value, size_t id_length,
                         bint has_role, const lxb_char_t *role_value, size_t role_length) except? -1:
        """class_groups(class, id, role), through the C cache."""
        cdef uint64_t hash = self.class_key(has_class, class_value, class_length, has_id, id_value, id_length,
                                            has_role, role_value, role_length)
        cdef CacheEntry *entry = _cache_find(hash)
        cdef long bits
        if entry.key != NULL:
            return entry.value
        if (_class_words_compiled and (not has_class or class_value == NULL or _is_ascii(class_value, class_length))
                and (not has_id or id_value == NULL or _is_ascii(id_value, id_length))
                and (not has_role or role_value == NULL or _is_ascii(role_value, role_length))):
            bits = ((_ascii_class_groups(class_value, class_length) if has_class and class_value != NULL else 0)
                    | (_ascii_class_groups(id_value, id_length) if has_id and id_value != NULL else 0)
                    | (_ascii_class_groups(role_value, role_length) if has_role and role_value != NULL else 0))
            _cache_store(entry, hash, bits)
            return bits
        bits = _class_groups(
            (_decode(class_value, class_length) if class_value != NULL else None) if has_class else None,
            (_decode(id_value, id_length) if id_value != NULL else None) if has_id else None,
            (_decode(role_value, role_length) if role_value != NULL else None) if has_role else None)
        # the key again: running Python code, another thread may have used the key buffer and the cache
        hash = self.class_key(has_class, class_value, class_length, has_id, id_value, id_length,
                              has_role, role_value, role_length)
        entry = _cache_find(hash)
        if entry.key == NULL:
            _cache_store(entry, hash, bits)
        return bits

    cdef uint64_t style_key(self, const lxb_char_t *style_value, size_t style_length) except? 0:
        global _key_length
        _key_length = 0
        _key_reserve(1)
        _key[0] = 83  # "S"
        _key_length = 1
        _key_add(style_value, style_length, True)
        return bw_hash(_key, _key_length)

    cdef bint style_hides(self, const lxb_char_t *style_value, size_t style_length) except -1:
        """bool(_HIDDEN_STYLE.search(style)) of a non-empty style, through the C cache."""
        cdef uint64_t hash = self.style_key(style_value, style_length)
        cdef CacheEntry *entry = _cache_find(hash)
        cdef bint hides
        if entry.key != NULL:
            return entry.value != 0
        hides = _hidden_search(_decode(style_value, style_length)) is not None
        hash = self.style_key(style_value, style_length)
        entry = _cache_find(hash)
        if entry.key == NULL:
            _cache_store(entry, hash, hides)
        return hides

    cdef int run(self, lxb_dom_node_t *body) except -1:
        cdef lxb_dom_node_t *node = body
        cdef lxb_dom_node_t *child
        cdef lxb_dom_attr_t *attr
        cdef Py_ssize_t top = 0  # frames[top].inner: the context of node
        cdef Context *context
        cdef Context inner
        cdef TagInfo info
        cdef size_t length, name_length
        cdef const lxb_char_t *data
        cdef const lxb_char_t *name
        cdef const lxb_char_t *class_value = NULL
        cdef const lxb_char_t *id_value = NULL
        cdef const lxb_char_t *role_value = NULL
        cdef const lxb_char_t *style_value = NULL
        cdef const lxb_char_t *aria_value = NULL
        cdef size_t class_length = 0, id_length = 0, role_length = 0, style_length = 0, aria_length = 0
        cdef bint any_attribute, has_class, has_id, has_role, has_style, has_hidden, has_aria, hidden
        cdef long own
        # the root context
        self.frames[0].inner.enclosing = 0
        self.frames[0].inner.ancestor_classes = 0
        self.frames[0].inner.own_classes = 0
        self.frames[0].inner.depth = 0
        self.frames[0].inner.in_link = False
        self.frames[0].inner.tag = <PyObject *> "body"
        self.frames[0].block = False
        self.open_top = 0
        self.open_blocks[0] = self.frames[0].inner
        self.serials[0] = 0
        self.serial = 0
        self.text_length = 0
        while True:
            context = &self.frames[top].inner
            # --- the node, in blocks_of's order
            if node.type == NODE_ELEMENT and node.local_name < BW_TAG_LAST_ENTRY \
                    and bw_element_qualified_id(node) == 0:
                info = _table[node.local_name]
            else:
                _slow_info(node, &info, self.keep)
            if info.flags & F_TEXT:
                if node.type == NODE_TEXT:
                    data = bw_text_data(node, &length)
                    if data != NULL and length:
                        self.append_text(data, length, context.in_link)
            elif info.flags & F_SKIP:
                pass
            elif info.flags & F_BR:
                if self.text_length:
                    self.flush(&self.open_blocks[self.open_top])
            else:
                if info.flags & F_CELL:
                    self.append(&_cell_byte, 1)
                any_attribute = has_class = has_id = has_role = has_style = has_hidden = has_aria = False
                attr = bw_first_attr(node)
                while attr != NULL:
                    any_attribute = True
                    name = bw_attr_qualified_name(attr, &name_length)
                    if name != NULL:
                        if _name_is(name, name_length, "class", 5):
                            has_class = True
                            class_value = bw_attr_value(attr, &class_length)
                        elif _name_is(name, name_length, "id", 2):
                            has_id = True
                            id_value = bw_attr_value(attr, &id_length)
                        elif _name_is(name, name_length, "role", 4):
                            has_role = True
                            role_value = bw_attr_value(attr, &role_length)
                        elif _name_is(name, name_length, "style", 5):
                            has_style = True
                            style_value = bw_attr_value(attr, &style_length)
                        elif _name_is(name, name_length, "hidden", 6):
                            has_hidden = True
                        elif _name_is(name, name_length, "aria-hidden", 11):
                            has_aria = True
                            aria_value = bw_attr_value(attr, &aria_length)
                    attr = bw_next_attr(attr)
                own = 0
                if any_attribute:
                    if has_hidden:
                        hidden = True
                    elif has_aria and aria_value != NULL and _name_is(aria_value, aria_length, "true", 4):
                        hidden = True
                    elif has_style and style_value != NULL and style_length:
                        hidden = self.style_hides(style_value, style_length)
                    else:
                        hidden = False
                    if hidden:
                        node = self.advance(node, &top)
                        if node == NULL:
                            break
                        continue
                    if has_class or has_id or has_role:
                        own = self.class_bits(has_class, class_value, class_length, has_id, id_value, id_length,
                                              has_role, role_value, role_length)
                inner.enclosing = context.enclosing | info.bit
                inner.ancestor_classes = context.ancestor_classes | own
                inner.depth = context.depth + 1
                inner.in_link = context.in_link
                if info.flags & F_BLOCK:
                    inner.own_classes = own
                    inner.tag = info.name
                    if self.text_length:
                        self.flush(&self.open_blocks[self.open_top])
                    self.push_block(&inner)
                else:
                    inner.own_classes = context.own_classes | own
                    inner.in_link = context.in_link or (info.flags & F_LINK) != 0
                    inner.tag = context.tag
                child = node.first_child
                if child != NULL:
                    top += 1
                    if top >= self.frame_size:
                        self.grow_frames()
                    self.frames[top].inner = inner
                    self.frames[top].block = (info.flags & F_BLOCK) != 0
                    node = child
                    continue
                if info.flags & F_BLOCK:
                    self.end_block(&inner)
            node = self.advance(node, &top)
            if node == NULL:
                break
        if self.text_length:
            self.flush(&self.open_blocks[self.open_top])
        return 0

    cdef lxb_dom_node_t *advance(self, lxb_dom_node_t *node, Py_ssize_t *top) except? NULL:
        """The node after node's subtree, ending the blocks it leaves; NULL past the body."""
        while True:
            if top[0] == 0:
                return NULL
            if node.next != NULL:
                return node.next
            node = node.parent
            if self.frames[top[0]].block:
                self.end_block(&self.frames[top[0]].inner)
            top[0] -= 1


def blocks_of(body):
    """tokenmill.extract.blockml.blocks_of(body): body is a parser's body node, None, or the
    LexborHTMLParser itself (its body is read)."""
    if not _configured:
        raise RuntimeError("_blockml.configure(tokenmill.extract.blockml) first")
    if isinstance(body, LexborHTMLParser):
        body = body.body
    if body is None:
        return []
    cdef LexborNode node = <LexborNode?> body
    if node._is_fragment_root or node._is_template_content or node.node == NULL:
        return _python_blocks_of(body)
    cdef _Walk walk = _Walk()
    walk.run(node.node)
    return walk.blocks


def forest_log_odds(const double[:, ::1] rows, const Py_ssize_t[:, ::1] features, const double[:, ::1] thresholds,
                    const double[:, ::1] leaves, double base, double[::1] out):
    """tokenmill.extract.gbdt.Forest.log_odds of `rows` into `out`: the same comparisons, and each
    row's leaves added tree after tree, in the order numpy's sum over the trees' axis adds them, so
    the same doubles."""
    cdef Py_ssize_t count = rows.shape[0], width = rows.shape[1], trees = features.shape[0]
    cdef Py_ssize_t inner = features.shape[1], row, tree, node
    if out.shape[0] != count or thresholds.shape[0] != trees or thresholds.shape[1] != inner \
            or leaves.shape[0] != trees or leaves.shape[1] != inner + 1:
        raise ValueError("forest_log_odds: the forest's arrays or `out` do not fit the rows")
    cdef Py_ssize_t depth, levels = 0
    while (1 << levels) - 1 < inner:  # a complete tree: inner = 2 ** levels - 1
        levels += 1
    if (1 << levels) - 1 != inner:
        raise ValueError("forest_log_odds: the trees are not complete binary trees")
    for tree in range(trees):  # once here, not at each of the rows' node visits
        for node in range(inner):
            if features[tree, node] < 0 or features[tree, node] >= width:
                raise ValueError("forest_log_odds: a node names a feature the rows lack")
    if count == 0:
        return
    if trees == 0:
        out[:] = base
        return
    # tree by tree over the rows, LANES rows at once: their walks down a tree are independent, so
    # the CPU overlaps their loads; each row's leaves are still added in the trees' order
    cdef Py_ssize_t lane, lanes, first
    cdef Py_ssize_t nodes[LANES]
    cdef double *totals = <double *> malloc(count * sizeof(double))
    if totals == NULL:
        raise MemoryError()
    try:
        for tree in range(trees):
            for first in range(0, count, LANES):
                lanes = min(LANES, count - first)
                for lane in range(lanes):
                    nodes[lane] = 0
                for depth in range(levels):
                    for lane in range(lanes):
                        node = nodes[lane]
                        nodes[lane] = 2 * node + 1 + (rows[first + lane, features[tree, node]] > thresholds[tree, node])
                for lane in range(lanes):
                    row = first + lane
                    totals[row] = leaves[tree, nodes[lane] - inner] if tree == 0 else totals[row] + leaves[tree, nodes[lane] - inner]
        for row in range(count):
            out[row] = base + totals[row]
    finally:
        free(totals)


# ---- TEXT_FEATURES of each block's text (blockml._text_rows), bit for bit
#
# text_rows(texts, stopwords) returns a bytearray of len(texts) * 11 float64 (native byte order);
# the caller wraps it: np.frombuffer(text_rows(texts, stopwords), dtype=np.float64).reshape(-1, 11).
#
# Exactness: text.lower().split() is [word.lower() for word in text.split()] (no character lowers
# into or out of str.isspace whitespace, and the final-sigma context of str.lower never crosses
# whitespace: checked for every code point), and str.lower of a word is _PyUnicode_ToLowerFull per
# code point except for U+03A3 (final sigma), whose words are lowered by str.lower itself. Stopword
# membership is looked up in a C hash table of the stopwords' UTF-8 (surrogates encoded as
# surrogatepass would), built once per frozenset object. isdigit/isupper/isalpha of one code point
# are Py_UNICODE_ISDIGIT/ISUPPER/ISALPHA, which is what str's methods call for a one-character string.


cdef extern from "math.h" nogil:
    double log1p(double x)

cdef extern from "Python.h":
    int PyUnicode_KIND(object o)
    void *PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    int PyUnicode_1BYTE_KIND
    int PyUnicode_2BYTE_KIND
    int Py_UNICODE_ISSPACE(uint32_t ch)
    int Py_UNICODE_ISDIGIT(uint32_t ch)
    int Py_UNICODE_ISUPPER(uint32_t ch)
    int Py_UNICODE_ISALPHA(uint32_t ch)
    int _PyUnicode_ToLowerFull(uint32_t ch, uint32_t *res)
    int PyUnicode_READY(object o) except -1

cdef enum:
    _TR_COLUMNS = 11

ctypedef fused _tr_char:
    uint8_t
    uint16_t
    uint32_t

# what an ASCII character counts as
cdef enum:
    _TR_SPACE = 1
    _TR_DIGIT = 2
    _TR_UPPER = 4
    _TR_ALPHA = 8
    _TR_PUNCT = 16     # _PUNCTUATION
    _TR_SEP = 32       # _SEPARATORS
    _TR_END = 64       # _SENTENCE_END
    _TR_DOLLAR = 128

cdef uint8_t _tr_ascii[128]
cdef uint64_t _tr_packed[128]  # what an ASCII character adds to _tr_row's packed counts
cdef uint8_t _tr_lower[128]


cdef void _tr_init_ascii():
    cdef int c
    for c in range(128):
        _tr_ascii[c] = 0
    for c in (9, 10, 11, 12, 13, 0x1c, 0x1d, 0x1e, 0x1f, 32):
        _tr_ascii[c] |= _TR_SPACE
    for c in range(48, 58):
        _tr_ascii[c] |= _TR_DIGIT
    for c in range(65, 91):
        _tr_ascii[c] |= _TR_UPPER | _TR_ALPHA
        _tr_ascii[c + 32] |= _TR_ALPHA
    for c in b".,;:!?":
        _tr_ascii[c] |= _TR_PUNCT
    for c in b"|/":
        _tr_ascii[c] |= _TR_SEP
    for c in b".!?:;\")":
        _tr_ascii[c] |= _TR_END
    _tr_ascii[36] |= _TR_DOLLAR
    for c in range(128):
        _tr_lower[c] = c + 32 if 65 <= c <= 90 else c
        _tr_packed[c] = ((1 if _tr_ascii[c] & _TR_DIGIT else 0) | (<uint64_t>(1 if _tr_ascii[c] & _TR_UPPER else 0) << 16)
                         | (<uint64_t>(1 if _tr_ascii[c] & _TR_ALPHA else 0) << 32)
                         | (<uint64_t>(1 if _tr_ascii[c] & _TR_PUNCT else 0) << 48))


_tr_init_ascii()


cdef inline bint _tr_punct(uint32_t c) nogil:  # non-ASCII part of _PUNCTUATION
    return c == 0x3002 or c == 0xff0c or c == 0x3001 or c == 0xff01 or c == 0xff1f


cdef inline bint _tr_sep(uint32_t c) nogil:  # non-ASCII part of _SEPARATORS
    return c == 0xb7 or c == 0xbb or c == 0x203a or c == 0x2022 or c == 0x2013 or c == 0x2014


cdef inline bint _tr_end(uint32_t c) nogil:  # non-ASCII part of _SENTENCE_END
    return c == 0x201d or c == 0x2019 or c == 0x3002 or c == 0xff01 or c == 0xff1f


cdef inline bint _tr_cjk(uint32_t c) nogil:  # _CJK
    return (0x3040 <= c <= 0x30ff) or (0x3400 <= c <= 0x9fff) or (0xac00 <= c <= 0xd7af)


cdef inline Py_ssize_t _tr_utf8(uint32_t c, uint8_t *out) nogil:
    """c's UTF-8 (a surrogate as 'surrogatepass' writes it) at out; its length."""
    if c < 0x80:
        out[0] = <uint8_t>c
        return 1
    if c < 0x800:
        out[0] = <uint8_t>(0xc0 | (c >> 6))
        out[1] = <uint8_t>(0x80 | (c & 0x3f))
        return 2
    if c < 0x10000:
        out[0] = <uint8_t>(0xe0 | (c >> 12))
        out[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3f))
        out[2] = <uint8_t>(0x80 | (c & 0x3f))
        return 3
    out[0] = <uint8_t>(0xf0 | (c >> 18))
    out[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3f))
    out[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3f))
    out[3] = <uint8_t>(0x80 | (c & 0x3f))
    return 4


cdef inline uint64_t _tr_hash(const uint8_t *p, Py_ssize_t n) nogil:
    cdef uint64_t h = 1469598103934665603ULL  # FNV-1a
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h


cdef inline uint16_t _tr_tag(uint64_t h) nogil:  # 0 marks an empty slot
    return <uint16_t>(h >> 48) | 1


# the stopwords of the last frozenset seen, by their UTF-8: open addressing, a 16-bit tag a slot
# (the tags, a quarter of a MB for blockml's 51,000 words, are all a miss reads)
cdef struct _TrSlot:
    uint32_t offset
    uint32_t size

cdef object _tr_words = None  # the frozenset the table holds (a reference: its id stays its own)
cdef uint16_t *_tr_tags = NULL
cdef _TrSlot *_tr_slots = NULL
cdef uint64_t _tr_mask = 0
cdef uint8_t *_tr_blob = NULL
cdef Py_ssize_t _tr_longest = 0  # bytes of the longest stopword
cdef uint8_t *_tr_buffer = NULL  # a word's lowered UTF-8, _tr_longest + 16 bytes


cdef inline bint _tr_lookup(const uint8_t *p, Py_ssize_t n) nogil:
    """Whether the UTF-8 p[:n] is a stopword's."""
    cdef uint64_t h = _tr_hash(p, n)
    cdef uint16_t tag = _tr_tag(h)
    cdef uint64_t i = h & _tr_mask
    while _tr_tags[i]:
        if _tr_tags[i] == tag and _tr_slots[i].size == n and memcmp(_tr_blob + _tr_slots[i].offset, p, n) == 0:
            return True
        i = (i + 1) & _tr_mask
    return False


cdef inline bint _tr_lookup_ascii(const _tr_char *p, Py_ssize_t n) nogil:
    """Whether the ASCII characters p[:n], lowered, are a stopword."""
    cdef uint64_t h = 1469598103934665603ULL
    cdef Py_ssize_t k
    cdef uint64_t i
    cdef uint16_t tag
    cdef const uint8_t *word
    for k in range(n):
        h = (h ^ _tr_lower[p[k]]) * 1099511628211ULL
    tag = _tr_tag(h)
    i = h & _tr_mask
    while _tr_tags[i]:
        if _tr_tags[i] == tag and _tr_slots[i].size == n:
            word = _tr_blob + _tr_slots[i].offset
            for k in range(n):
                if word[k] != _tr_lower[p[k]]:
                    break
            else:
                return True
        i = (i + 1) & _tr_mask
    return False


cdef int _tr_lookup_word(str text, const _tr_char *p, Py_ssize_t start, Py_ssize_t end, frozenset stopwords) except -1:
    """Whether text[start:end], a word with a non-ASCII character, lowered, is a stopword."""
    cdef Py_ssize_t k, m, j, size = 0, cap = _tr_longest
    cdef uint32_t c
    cdef uint32_t lowered[3]
    cdef uint8_t *buf = _tr_buffer
    for k in range(start, end):
        c = p[k]
        if c == 0x3a3:  # str.lower's final sigma depends on the letters around it (within the word)
            return PyUnicode_Substring(text, start, end).lower() in stopwords
    for k in range(start, end):
        c = p[k]
        if c < 128:
            buf[size] = _tr_lower[c]
            size += 1
        else:
            m = _PyUnicode_ToLowerFull(c, lowered)
            for j in range(m):
                size += _tr_utf8(lowered[j], buf + size)
        if size > cap:  # at most cap + 12 bytes written
            return False
    return _tr_lookup(buf, size)


cdef Py_ssize_t _tr_encode(object word, uint8_t *out):
    """word's UTF-8 at out (4 bytes a code point at most); its length."""
    cdef int kind = PyUnicode_KIND(word)
    cdef void *data = PyUnicode_DATA(word)
    cdef Py_ssize_t i, n = PyUnicode_GET_LENGTH(word), size = 0
    cdef uint32_t c
    for i in range(n):
        if kind == PyUnicode_1BYTE_KIND:
            c = (<uint8_t *>data)[i]
        elif kind == PyUnicode_2BYTE_KIND:
            c = (<uint16_t *>data)[i]
        else:
            c = (<uint32_t *>data)[i]
        size += _tr_utf8(c, out + size)
    return size


cdef void _tr_build(frozenset stopwords) except *:
    global _tr_words, _tr_tags, _tr_slots, _tr_mask, _tr_blob, _tr_longest, _tr_buffer
    cdef Py_ssize_t total = 0, longest = 0, count = 0, size, offset = 0
    cdef uint64_t capacity = 16, h, i
    cdef uint8_t *blob
    cdef uint16_t *tags
    cdef _TrSlot *slots
    cdef uint8_t *buffer
    for word in stopwords:
        if isinstance(word, str):
            total += 4 * PyUnicode_GET_LENGTH(word)
            count += 1
    if total >= 0xffffffff:
        raise OverflowError("text_rows: stopwords of more than 4 GB")
    while capacity < <uint64_t>(2 * count):
        capacity *= 2
    blob = <uint8_t *>malloc(total + 1)
    tags = <uint16_t *>calloc(capacity, sizeof(uint16_t))
    slots = <_TrSlot *>calloc(capacity, sizeof(_TrSlot))
    if blob == NULL or tags == NULL or slots == NULL:
        free(blob)
        free(tags)
        free(slots)
        raise MemoryError()
    for word in stopwords:
        if not isinstance(word, str):  # no str equals it: a lowered word never is it
            continue
        size = _tr_encode(word, blob + offset)
        longest = max(longest, size)
        h = _tr_hash(blob + offset, size)
        i = h & (capacity - 1)
        while tags[i]:  # a frozenset's words are distinct
            i = (i + 1) & (capacity - 1)
        tags[i] = _tr_tag(h)
        slots[i].offset = <uint32_t>offset
        slots[i].size = <uint32_t>size
        offset += size
    buffer = <uint8_t *>malloc(longest + 16)
    if buffer == NULL:
        free(blob)
        free(tags)
        free(slots)
        raise MemoryError()
    free(_tr_tags)
    free(_tr_slots)
    free(_tr_blob)
    free(_tr_buffer)
    _tr_tags, _tr_slots, _tr_blob, _tr_mask, _tr_longest, _tr_buffer = tags, slots, blob, capacity - 1, longest, buffer
    _tr_words = stopwords


cdef int _tr_row(str text, const _tr_char *data, Py_ssize_t n, frozenset stopwords, double *row) except -1:
    cdef Py_ssize_t i, start = 0, words = 0, stops = 0, cap = _tr_longest, chunk = 0, chunk_end
    cdef Py_ssize_t digits = 0, upper = 0, letters = 0, punct = 0, seps = 0, cjk = 0, last_dollar = -1
    cdef uint64_t packed = 0  # ASCII digits, upper, letters, punctuation: 16 bits each
    cdef uint32_t c
    cdef uint8_t f
    cdef bint in_word = False, ascii_word = True, tex = False, ends
    while True:
        chunk_end = n if n - chunk <= 0xffff else chunk + 0xffff
        for i in range(chunk, chunk_end):
            c = data[i]
            if c < 128:
                f = _tr_ascii[c]
                if not (f & _TR_SPACE):
                    if not in_word:
                        in_word, start, ascii_word = True, i, True
                    packed += _tr_packed[c]
                    if f & (_TR_SEP | _TR_DOLLAR):
                        if f & _TR_SEP:
                            seps += 1
                        else:
                            if last_dollar >= 0 and i - last_dollar > 1:
                                tex = True
                            last_dollar = i
                    continue
            elif not Py_UNICODE_ISSPACE(c):
                if not in_word:
                    in_word, start = True, i
                ascii_word = False
                digits += Py_UNICODE_ISDIGIT(c) != 0
                upper += Py_UNICODE_ISUPPER(c) != 0
                letters += Py_UNICODE_ISALPHA(c) != 0
                punct += _tr_punct(c)
                seps += _tr_sep(c)
                cjk += _tr_cjk(c)
                continue
            if in_word:  # whitespace after a word
                in_word = False
                words += 1
                if i - start <= cap:  # lowering makes no fewer characters, each a byte or more
                    if ascii_word:
                        stops += _tr_lookup_ascii(data + start, i - start)
                    else:
                        stops += _tr_lookup_word(text, data, start, i, stopwords)
        digits += packed & 0xffff
        upper += (packed >> 16) & 0xffff
        letters += (packed >> 32) & 0xffff
        punct += packed >> 48
        packed = 0
        if chunk_end == n:
            break
        chunk = chunk_end
    if in_word:
        words += 1
        if n - start <= cap:
            if ascii_word:
                stops += _tr_lookup_ascii(data + start, n - start)
            else:
                stops += _tr_lookup_word(text, data, start, n, stopwords)
    if words == 0:
        raise ZeroDivisionError("division by zero")
    c = data[n - 1]
    if c < 128:
        ends = (_tr_ascii[c] & _TR_END) != 0
    else:
        ends = _tr_end(c)
    row[0] = log1p(<double>n)
    row[1] = <double>(words if words < 200 else 200)
    row[2] = <double>stops / <double>words
    row[3] = <double>punct / <double>n
    row[4] = 1.0 if ends else 0.0
    row[5] = <double>digits / <double>n
    row[6] = <double>upper / <double>(letters if letters > 1 else 1)
    row[7] = <double>seps
    row[8] = <double>cjk / <double>n
    row[9] = <double>n / <double>words
    row[10] = 1.0 if tex else 0.0
    return 0


def text_rows(list texts, frozenset stopwords):
    """blockml._text_rows(texts, stopwords) as len(texts) * 11 float64 in a bytearray:
    np.frombuffer(text_rows(texts, stopwords), dtype=np.float64).reshape(-1, 11)."""
    cdef Py_ssize_t index, count = len(texts), n
    cdef int kind
    cdef void *data
    cdef double *rows
    cdef str text
    if stopwords is not _tr_words:
        _tr_build(stopwords)
    result = PyByteArray_FromStringAndSize(NULL, count * _TR_COLUMNS * sizeof(double))
    rows = <double *>PyByteArray_AS_STRING(result)
    for index in range(count):
        text = texts[index]
        if text is None:
            raise TypeError("text_rows: a text is None")
        PyUnicode_READY(text)
        n = PyUnicode_GET_LENGTH(text)
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
        if kind == PyUnicode_1BYTE_KIND:
            _tr_row(text, <const uint8_t *>data, n, stopwords, rows + index * _TR_COLUMNS)
        elif kind == PyUnicode_2BYTE_KIND:
            _tr_row(text, <const uint16_t *>data, n, stopwords, rows + index * _TR_COLUMNS)
        else:
            _tr_row(text, <const uint32_t *>data, n, stopwords, rows + index * _TR_COLUMNS)
    return result


# ---- the page's feature matrix (blockml.page_matrix) from its blocks and their text rows, bit for
# bit: every sum it takes is of whole numbers (exact in any order) or a running sum taken in
# numpy's order, every log is libm's log1p as blockml's (math.log1p), and the page's mean
# stop-word share is left to numpy, as blockml leaves it

from libc.math cimport log1p

cdef enum:
    LANES = 8
    MAX_BLOCK_WINDOW = 64
    MAX_LEVELS = 8
    MAX_BITS = 62
    MAX_NEIGHBOURS = 16
    MAX_WINDOWS = 8

cdef Py_ssize_t _matrix_width = 0, _text_width = 0
cdef Py_ssize_t _text_at[32]
cdef Py_ssize_t _link_share_at, _cells_at, _position_at, _char_position_at, _repeats_at, _depth_at, _block_tag_at
cdef Py_ssize_t _container_at[MAX_LEVELS][4]  # log_chars, link_share, log_blocks, block_share of each level
cdef Py_ssize_t _levels = 0
# enclosing tags, ancestors' classes, own classes: how many bits, and the first one's column
cdef Py_ssize_t _bit_count[3]
cdef Py_ssize_t _bit_at[3]
cdef Py_ssize_t _neighbour_count = 0, _window_count = 0, _window_feature_count = 0
cdef Py_ssize_t _neighbour_from[MAX_NEIGHBOURS]
cdef Py_ssize_t _previous_at[MAX_NEIGHBOURS]
cdef Py_ssize_t _next_at[MAX_NEIGHBOURS]
cdef Py_ssize_t _window_size[MAX_WINDOWS]
cdef Py_ssize_t _window_from[MAX_NEIGHBOURS]
cdef Py_ssize_t _window_at[MAX_WINDOWS][MAX_NEIGHBOURS]
cdef Py_ssize_t _page_blocks_at, _page_log_chars_at, _page_link_share_at
cdef object _block_tag_code = None
cdef bint _matrix_configured = False


def _configure_matrix(blockml):
    """Where each of blockml.FEATURES goes, checking that page_rows fills every column once."""
    global _matrix_width, _text_width, _link_share_at, _cells_at, _position_at, _char_position_at, _repeats_at
    global _depth_at, _block_tag_at, _levels, _neighbour_count, _window_count, _window_feature_count
    global _page_blocks_at, _page_log_chars_at, _page_link_share_at, _block_tag_code, _matrix_configured
    _matrix_configured = False
    features = list(blockml.FEATURES)
    filled = []

    def at(name):
        filled.append(name)
        return features.index(name)

    _matrix_width = len(features)
    text_features = list(blockml.TEXT_FEATURES)
    if len(text_features) != _TR_COLUMNS:
        raise ImportError("_blockml.text_rows writes other text features than blockml's")
    _text_width = len(text_features)
    for index, name in enumerate(text_features):
        _text_at[index] = at(name)
    _link_share_at, _cells_at, _position_at, _char_position_at = (at("link_share"), at("cells"), at("position"),
                                                                  at("char_position"))
    _repeats_at, _depth_at, _block_tag_at = at("repeats"), at("depth"), at("block_tag")
    _levels = blockml.CONTAINER_LEVELS
    if _levels + 1 > MAX_LEVELS:
        raise ImportError("_blockml holds fewer container levels than blockml reads")
    for level in range(1, _levels + 1):
        for index, name in enumerate(("log_chars", "link_share", "log_blocks", "block_share")):
            _container_at[level - 1][index] = at(f"container{level}_{name}")
    for group, (prefix, names) in enumerate((("in_", blockml.ENCLOSING_TAGS), ("ancestor_class_", blockml._CLASS_GROUPS),
                                             ("own_class_", blockml._CLASS_GROUPS))):
        if len(names) > MAX_BITS:
            raise ImportError("_blockml holds fewer bits than blockml reads")
        _bit_count[group] = len(names)
        _bit_at[group] = features.index(f"{prefix}{names[0]}")
        for offset, name in enumerate(names):
            if at(f"{prefix}{name}") != _bit_at[group] + offset:
                raise ImportError("blockml's bit features are not in a row")
    neighbours, windows = list(blockml.NEIGHBOUR_FEATURES), list(blockml.WINDOW_FEATURES)
    if len(neighbours) > MAX_NEIGHBOURS or len(windows) > MAX_NEIGHBOURS or len(blockml.WINDOWS) > MAX_WINDOWS:
        raise ImportError("_blockml holds fewer neighbour or window features than blockml reads")
    _neighbour_count = len(neighbours)
    for index, name in enumerate(neighbours):
        _neighbour_from[index] = features.index(name)
        _previous_at[index], _next_at[index] = at(f"previous_{name}"), at(f"next_{name}")
    _window_count, _window_feature_count = len(blockml.WINDOWS), len(windows)
    for index, name in enumerate(windows):
        _window_from[index] = features.index(name)
    for window, size in enumerate(blockml.WINDOWS):
        if not 0 <= size <= MAX_BLOCK_WINDOW:
            raise ImportError("_blockml holds narrower windows than blockml reads")
        _window_size[window] = size
        for index, name in enumerate(windows):
            _window_at[window][index] = at(f"window{size}_{name}")
    _page_blocks_at, _page_log_chars_at, _page_link_share_at = (at("page_blocks"), at("page_log_chars"),
                                                                at("page_link_share"))
    filled.append("page_stopword_share")  # numpy's mean, in blockml.page_matrix
    if sorted(filled) != sorted(features):
        raise ImportError("_blockml.page_rows fills other columns than blockml.FEATURES")
    _block_tag_code = dict(blockml._BLOCK_TAG_CODE)
    _matrix_configured = True


cdef inline double _at_most_one(double value) noexcept:  # np.minimum(1.0, value), NaN kept
    return 1.0 if value > 1.0 else value


cdef inline double _at_least_one(double value) noexcept:  # np.maximum(1.0, value) of a number
    return value if value > 1.0 else 1.0


def page_rows(list blocks, list texts, const double[:, ::1] text_columns, double[:, ::1] out):
    """blockml.page_matrix's rows of `blocks` (their texts as written, and text_rows of them) into
    `out`, all but the page's mean stop-word share."""
    cdef Py_ssize_t n = len(blocks), width = _levels + 1, i, k, level, group, window, size, serial, last, length
    cdef Py_ssize_t largest = -1, count, held
    cdef double chars_total = 0.0, links_total = 0.0, before = 0.0, total, page_blocks, page_log_chars, page_link_share
    cdef double *chars = NULL
    cdef double *links = NULL
    cdef double *container_chars = NULL
    cdef double *container_links = NULL
    cdef double *sums = NULL
    cdef Py_ssize_t *container_blocks = NULL
    cdef Py_ssize_t *serials = NULL
    cdef long bits
    cdef tuple block, containers
    cdef dict repeats = {}
    if not _matrix_configured:
        raise RuntimeError("_blockml.page_rows before configure()")
    if len(texts) != n or text_columns.shape[0] != n or text_columns.shape[1] != _text_width \
            or out.shape[0] != n or out.shape[1] != _matrix_width:
        raise ValueError("page_rows: the texts, text rows or `out` do not fit the blocks")
    if n == 0:
        return
    chars = <double *> malloc(n * sizeof(double))
    links = <double *> malloc(n * sizeof(double))
    serials = <Py_ssize_t *> malloc(n * width * sizeof(Py_ssize_t))
    sums = <double *> malloc((n + 2 * MAX_BLOCK_WINDOW + 2) * sizeof(double))
    try:
        if chars == NULL or links == NULL or serials == NULL or sums == NULL:
            raise MemoryError()
        for i in range(n):
            item = blocks[i]
            if not isinstance(item, tuple) or len(<tuple> item) < 8:
                raise TypeError("page_rows: a block is not a Block")
            block = <tuple> item
            text = texts[i]
            chars[i] = <double> len(text)
            links[i] = <double> block[1]
            chars_total += chars[i]
            links_total += links[i]
            repeats[text] = repeats.get(text, 0) + 1
            item = block[7]
            if not isinstance(item, tuple):
                raise TypeError("page_rows: a block's containers are not a tuple")
            containers = <tuple> item
            length = len(containers)
            if length > width:
                raise ValueError("page_rows: a block has more containers than CONTAINER_LEVELS + 1")
            for k in range(width):
                serial = <Py_ssize_t> containers[k - (width - length)] if k >= width - length else -1
                serials[i * width + k] = serial
                if serial > largest:
                    largest = serial
        size = largest + 1 if largest >= 0 else 1
        container_chars = <double *> calloc(size, sizeof(double))
        container_links = <double *> calloc(size, sizeof(double))
        container_blocks = <Py_ssize_t *> calloc(size, sizeof(Py_ssize_t))
        if container_chars == NULL or container_links == NULL or container_blocks == NULL:
            raise MemoryError()
        for i in range(n):
            for k in range(width):
                serial = serials[i * width + k]
                if serial >= 0:
                    container_chars[serial] += chars[i]
                    container_links[serial] += links[i]
                    container_blocks[serial] += 1
        for i in range(n):
            block = <tuple> blocks[i]
            for k in range(_text_width):
                out[i, _text_at[k]] = text_columns[i, k]
            out[i, _link_share_at] = _at_most_one(links[i] / chars[i])
            out[i, _cells_at] = <double> (<str> block[0]).count(_CELL)
            out[i, _position_at] = <double> i / <double> n
            out[i, _char_position_at] = before / _at_least_one(chars_total)
            before += chars[i]
            out[i, _repeats_at] = <double> (<Py_ssize_t> repeats[texts[i]] - 1)
            out[i, _depth_at] = <double> <Py_ssize_t> block[5]
            out[i, _block_tag_at] = <double> <Py_ssize_t> _block_tag_code.get(block[6], -1)
            for level in range(1, _levels + 1):
                serial = serials[i * width + width - 1 - level]
                if serial < 0:
                    for k in range(4):
                        out[i, _container_at[level - 1][k]] = -1.0
                    continue
                total = container_chars[serial]
                out[i, _container_at[level - 1][0]] = log1p(total)
                out[i, _container_at[level - 1][1]] = _at_most_one(container_links[serial] / _at_least_one(total))
                out[i, _container_at[level - 1][2]] = log1p(<double> container_blocks[serial])
                out[i, _container_at[level - 1][3]] = chars[i] / _at_least_one(total)
            for group in range(3):
                bits = <long> block[2 + group]
                for k in range(_bit_count[group]):
                    out[i, _bit_at[group] + k] = <double> ((bits >> k) & 1)
        for i in range(n):
            for k in range(_neighbour_count):
                out[i, _previous_at[k]] = out[i - 1, _neighbour_from[k]] if i > 0 else -1.0
                out[i, _next_at[k]] = out[i + 1, _neighbour_from[k]] if i + 1 < n else -1.0
        for window in range(_window_count):
            size = _window_size[window]
            for k in range(_window_feature_count):
                # np.cumsum over [0, size zeros, the column, size zeros], each sum in its order
                sums[0] = 0.0
                for last in range(1, n + 2 * size + 1):
                    held = last - 1 - size
                    sums[last] = sums[last - 1] + (out[held, _window_from[k]] if 0 <= held < n else 0.0)
                for i in range(n):
                    count = min(i + size, n - 1) - max(i - size, 0) + 1
                    out[i, _window_at[window][k]] = (sums[2 * size + 1 + i] - sums[i]) / <double> max(count, 1)
        page_blocks, page_log_chars = log1p(<double> n), log1p(chars_total)
        page_link_share = links_total / _at_least_one(chars_total)
        for i in range(n):
            out[i, _page_blocks_at] = page_blocks
            out[i, _page_log_chars_at] = page_log_chars
            out[i, _page_link_share_at] = page_link_share
    finally:
        free(chars)
        free(links)
        free(serials)
        free(sums)
        free(container_chars)
        free(container_links)
        free(container_blocks)
