/* Struct reads on lexbor's DOM for _blockml.pyx: no lexbor function is called (every helper
 * below is static inline, and lexbor_hash_entry_str is lxb_inline in lexbor/core/hash.h), so the
 * module needs none of lexbor's symbols, which selectolax's extension (loaded RTLD_LOCAL) holds.
 * The layouts come from the lexbor headers of the selectolax sdist whose wheel is installed. */
#ifndef BLOCKML_LXB_H
#define BLOCKML_LXB_H

#include <stdint.h>
#include <string.h>
#include "lexbor/core/hash.h"
#include "lexbor/dom/interfaces/node.h"
#include "lexbor/dom/interfaces/element.h"
#include "lexbor/dom/interfaces/attr.h"
#include "lexbor/dom/interfaces/character_data.h"
#include "lexbor/tag/tag.h"
#include "lexbor/tag/const.h"
/* static tables of the predefined names: copies of the ones in selectolax's .so, read by id */
#include "lexbor/tag/res.h"
#include "lexbor/dom/interfaces/attr_res.h"

#define BW_TAG_LAST_ENTRY ((uintptr_t) LXB_TAG__LAST_ENTRY)
#define BW_ATTR_LAST_ENTRY ((uintptr_t) LXB_DOM_ATTR__LAST_ENTRY)

/* lxb_tag_data_by_id + lexbor_hash_entry_str: a tag id's name (NULL for the "last entry" id) */
static inline const lxb_char_t *
bw_tag_name_by_id(uintptr_t id, size_t *len)
{
    const lxb_tag_data_t *data;
    if (id >= BW_TAG_LAST_ENTRY) {
        if (id == BW_TAG_LAST_ENTRY) {
            *len = 0;
            return NULL;
        }
        data = (const lxb_tag_data_t *) id;
    }
    else {
        data = &lxb_tag_res_data_default[id];
    }
    *len = data->entry.length;
    return lexbor_hash_entry_str(&data->entry);
}

/* the element's qualified_name id (0: none, its name is its local_name's) */
static inline uintptr_t
bw_element_qualified_id(const lxb_dom_node_t *node)
{
    return ((const lxb_dom_element_t *) node)->qualified_name;
}

/* lxb_dom_element_qualified_name */
static inline const lxb_char_t *
bw_element_qualified_name(const lxb_dom_node_t *node, size_t *len)
{
    const lxb_dom_element_t *element = (const lxb_dom_element_t *) node;
    return bw_tag_name_by_id(element->qualified_name != 0 ? element->qualified_name : node->local_name, len);
}

static inline lxb_dom_attr_t *
bw_first_attr(const lxb_dom_node_t *node)
{
    return ((const lxb_dom_element_t *) node)->first_attr;
}

static inline lxb_dom_attr_t *
bw_next_attr(const lxb_dom_attr_t *attr)
{
    return attr->next;
}

/* lxb_dom_attr_qualified_name (lxb_dom_attr_data_by_id) */
static inline const lxb_char_t *
bw_attr_qualified_name(const lxb_dom_attr_t *attr, size_t *len)
{
    const lxb_dom_attr_data_t *data;
    uintptr_t id = attr->qualified_name != 0 ? attr->qualified_name : attr->node.local_name;
    if (id >= BW_ATTR_LAST_ENTRY) {
        if (id == BW_ATTR_LAST_ENTRY) {
            *len = 0;
            return NULL;
        }
        data = (const lxb_dom_attr_data_t *) id;
    }
    else {
        data = &lxb_dom_attr_res_data_default[id];
    }
    *len = data->entry.length;
    return lexbor_hash_entry_str(&data->entry);
}

/* lxb_dom_attr_value_noi */
static inline const lxb_char_t *
bw_attr_value(const lxb_dom_attr_t *attr, size_t *len)
{
    if (attr->value == NULL) {
        *len = 0;
        return NULL;
    }
    *len = attr->value->length;
    return attr->value->data;
}

/* a text node's character data (selectolax's text_content reads the same lexbor_str_t) */
static inline const lxb_char_t *
bw_text_data(const lxb_dom_node_t *node, size_t *len)
{
    const lexbor_str_t *str = &((const lxb_dom_character_data_t *) node)->data;
    *len = str->length;
    return str->data;
}


/* ---- text: UTF-8 bytes handled as CPython 3.11's str would handle their decoding ---- */

/* 1 if data is well-formed UTF-8 (RFC 3629 / Unicode Table 3-7: no overlongs, no surrogates, nothing
 * past U+10FFFF), which CPython decodes without a replacement; 0 otherwise (never more lenient) */
static inline int
bw_utf8_valid(const unsigned char *p, size_t n)
{
    const unsigned char *end = p + n;
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2;
        }
        else if (c >= 0xE0 && c <= 0xEF) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && p[1] < 0xA0) return 0;           /* overlong */
            if (c == 0xED && p[1] > 0x9F) return 0;           /* surrogates */
            p += 3;
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            if (c == 0xF0 && p[1] < 0x90) return 0;           /* overlong */
            if (c == 0xF4 && p[1] > 0x8F) return 0;           /* past U+10FFFF */
            p += 4;
        }
        else {
            return 0;
        }
    }
    return 1;
}

/* the length of the whitespace character (str.isspace, CPython 3.11 / Unicode 14) at p, or 0;
 * p < end, the text well-formed UTF-8 */
static inline size_t
bw_space_at(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = *p;
    if (c < 0x80) {
        return (c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
    }
    if (c == 0xC2) {
        return (end - p >= 2 && (p[1] == 0x85 || p[1] == 0xA0)) ? 2 : 0;
    }
    if (c == 0xE1) {
        return (end - p >= 3 && p[1] == 0x9A && p[2] == 0x80) ? 3 : 0;  /* U+1680 */
    }
    if (c == 0xE2) {
        if (end - p < 3) return 0;
        if (p[1] == 0x80) {
            unsigned char d = p[2];
            return ((d >= 0x80 && d <= 0x8A) || d == 0xA8 || d == 0xA9 || d == 0xAF) ? 3 : 0;  /* U+2000-200A, 2028, 2029, 202F */
        }
        return (p[1] == 0x81 && p[2] == 0x9F) ? 3 : 0;  /* U+205F */
    }
    if (c == 0xE3) {
        return (end - p >= 3 && p[1] == 0x80 && p[2] == 0x80) ? 3 : 0;  /* U+3000 */
    }
    return 0;
}

/* " ".join(text.split()) of src[0:n] into dst (room for n bytes); its length */
static inline size_t
bw_collapse(const unsigned char *src, size_t n, unsigned char *dst)
{
    const unsigned char *p = src, *end = src + n;
    unsigned char *out = dst;
    int pending = 0;  /* a space is due before the next word */
    size_t space;
    while (p < end) {
        if (*p > 0x20 && *p < 0x80) {  /* the common case: a printable ASCII byte */
            if (pending) {
                *out++ = ' ';
                pending = 0;
            }
            *out++ = *p++;
            continue;
        }
        space = bw_space_at(p, end);
        if (space) {
            if (out != dst) pending = 1;
            p += space;
            continue;
        }
        if (pending) {
            *out++ = ' ';
            pending = 0;
        }
        *out++ = *p++;  /* any other byte: a whole sequence is copied byte by byte */
    }
    return out - dst;
}

/* blockml._collapsed of text holding cell (an ASCII character): each cell collapsed, joined by cell,
 * stripped of cell and " " at both ends */
static inline size_t
bw_collapse_cells(const unsigned char *src, size_t n, unsigned char cell, unsigned char *dst)
{
    const unsigned char *p = src, *end = src + n, *stop;
    unsigned char *out = dst, *begin;
    int first = 1;
    while (1) {
        stop = memchr(p, cell, end - p);
        if (stop == NULL) stop = end;
        if (!first) *out++ = cell;
        first = 0;
        out += bw_collapse(p, stop - p, out);
        if (stop == end) break;
        p = stop + 1;
    }
    begin = dst;
    while (begin < out && (*begin == cell || *begin == ' ')) begin++;
    while (out > begin && (out[-1] == cell || out[-1] == ' ')) out--;
    if (begin != dst) memmove(dst, begin, out - begin);
    return out - begin;
}

/* len(text.strip()) of well-formed UTF-8: the characters left once whitespace is stripped */
static inline size_t
bw_stripped_chars(const unsigned char *src, size_t n)
{
    const unsigned char *p = src, *end = src + n, *last, *q;
    size_t space, count = 0;
    while (p < end && (space = bw_space_at(p, end))) p += space;
    /* the end of the last character that is not whitespace */
    last = p;
    for (q = p; q < end;) {
        size_t step;
        space = bw_space_at(q, end);
        if (space) {
            q += space;
            continue;
        }
        step = *q < 0x80 ? 1 : *q < 0xE0 ? 2 : *q < 0xF0 ? 3 : 4;
        q += step;
        last = q;
    }
    for (q = p; q < last; q++) {
        if ((*q & 0xC0) != 0x80) count++;
    }
    return count;
}

/* 64-bit FNV-1a, for the C cache of class_groups and style results */
static inline uint64_t
bw_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    while (n--) {
        h ^= *p++;
        h *= 1099511628211ULL;
    }
    return h;
}

/* compile-time facts the module relies on */
_Static_assert(LXB_TAG__TEXT == 2 && LXB_TAG__DOCUMENT == 3 && LXB_TAG__EM_COMMENT == 4
               && LXB_TAG__EM_DOCTYPE == 5, "selectolax's _TAG_TO_NAME ids");

#endif
