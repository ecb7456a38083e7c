/* What names a plugin library in every verdict (harness/exec/workloads.h,
 * ckh_workloads_plugin_id): its ELF NT_GNU_BUILD_ID note, read from the
 * file's program headers without loading it, or a hash of its bytes when
 * it has none. The files here are made by hand so that every shape the
 * reader must not trust is met: not ELF, the other byte order, a 32-bit
 * ELF, program headers of a foreign size or too many of them, notes cut
 * short, other notes before the build id, and a build id too long for
 * the caller's buffer. A file the reader refuses is still named, by its
 * content hash, never by bytes read past what it holds. */
#include <check.h>
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/tmpdir.h"
#include "exec/workloads.h"
#include "support/skip.h"

static char base[128];

static void setup(void)
{
    snprintf(base, sizeof base, "/tmp/ckh-test-plugin-id-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
}

static void teardown(void)
{
    ck_assert_int_eq(ckh_tmp_remove(base), 0);
}

/* A note: namesz, descsz, type, name and desc each padded to 4. */
static size_t put_note(unsigned char *at, const char *name, uint32_t type, const unsigned char *desc, uint32_t dlen)
{
    uint32_t nlen = (uint32_t)strlen(name) + 1;
    uint32_t hdr[3] = {nlen, dlen, type};
    /* the padding after the name and the descriptor is zeros, as a linker writes it */
    memset(at, 0, sizeof hdr + ((nlen + 3u) & ~3u) + ((dlen + 3u) & ~3u));
    memcpy(at, hdr, sizeof hdr);
    size_t off = sizeof hdr;
    memcpy(at + off, name, nlen);
    off += (nlen + 3u) & ~3u;
    memcpy(at + off, desc, dlen);
    off += (dlen + 3u) & ~3u;
    return off;
}

struct shape {
    unsigned char cls;    /* ELFCLASS64 or ELFCLASS32 */
    unsigned char data;   /* ELFDATA2LSB (this machine) or MSB */
    uint16_t phentsize;   /* 0: the right one */
    uint16_t phnum;       /* program headers (the first is the note, the rest PT_LOAD) */
    uint64_t note_size;   /* 0: the notes' own size */
    uint64_t note_off;    /* 0: where they are */
    size_t cut;           /* bytes of the file kept (0: all) */
};

/* Writes a file named name of the given shape holding notes (len bytes);
 * returns its path (static buffer). */
static const char *elf_file(const char *name, const struct shape *s, const unsigned char *notes, size_t len)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", base, name);
    unsigned char file[16384];
    memset(file, 0, sizeof file);
    bool is64 = s->cls == ELFCLASS64;
    size_t ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
    size_t phsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
    size_t phnum = s->phnum;
    size_t notes_at = ehsize + phsize * (phnum > 8 ? 8 : phnum);
    ck_assert_uint_le(notes_at + len, sizeof file);
    memcpy(file, ELFMAG, SELFMAG);
    file[EI_CLASS] = s->cls;
    file[EI_DATA] = s->data;
    file[EI_VERSION] = EV_CURRENT;
    uint64_t nsize = s->note_size ? s->note_size : len, noff = s->note_off ? s->note_off : notes_at;
    if (is64) {
        Elf64_Ehdr *e = (Elf64_Ehdr *)file;
        e->e_phoff = ehsize;
        e->e_phentsize = s->phentsize ? s->phentsize : (uint16_t)phsize;
        e->e_phnum = s->phnum;
        for (size_t i = 0; i < phnum && i < 8; i++) {
            Elf64_Phdr *p = (Elf64_Phdr *)(file + ehsize + i * phsize);
            p->p_type = i == 0 ? PT_NOTE : PT_LOAD;
            p->p_offset = i == 0 ? noff : 0;
            p->p_filesz = i == 0 ? nsize : 0;
        }
    } else {
        Elf32_Ehdr *e = (Elf32_Ehdr *)file;
        e->e_phoff = (Elf32_Off)ehsize;
        e->e_phentsize = s->phentsize ? s->phentsize : (uint16_t)phsize;
        e->e_phnum = s->phnum;
        for (size_t i = 0; i < phnum && i < 8; i++) {
            Elf32_Phdr *p = (Elf32_Phdr *)(file + ehsize + i * phsize);
            p->p_type = i == 0 ? PT_NOTE : PT_LOAD;
            p->p_offset = (Elf32_Off)(i == 0 ? noff : 0);
            p->p_filesz = (Elf32_Word)(i == 0 ? nsize : 0);
        }
    }
    memcpy(file + notes_at, notes, len);
    size_t total = s->cut ? s->cut : notes_at + len;
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(file, 1, total, f), total);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

static void id_of(const char *path, char *buf, size_t n)
{
    ckh_workloads_plugin_id(path, buf, n);
}

static void expect_hash(const char *path, const char *why)
{
    char id[200];
    id_of(path, id, sizeof id);
    ck_assert_msg(strncmp(id, "content-hash ", 13) == 0 && strlen(id) == 13 + 16, "%s: %s", why, id);
}

START_TEST(test_build_id_found)
{
    static const unsigned char bid[] = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04};
    unsigned char notes[512];
    size_t len = 0;
    /* another owner's note and a GNU note of another type come first */
    len += put_note(notes + len, "Go", 4, (const unsigned char *)"abcdefg", 7);
    len += put_note(notes + len, "GNU", NT_GNU_ABI_TAG, (const unsigned char *)"\0\0\0\0\3\0\0\0\2\0\0\0\0\0\0\0", 16);
    len += put_note(notes + len, "GNU", NT_GNU_BUILD_ID, bid, sizeof bid);
    struct shape s64 = {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 3};
    char id[200];
    id_of(elf_file("lib64.so", &s64, notes, len), id, sizeof id);
    ck_assert_str_eq(id, "build-id deadbeef01020304");
    struct shape s32 = {.cls = ELFCLASS32, .data = ELFDATA2LSB, .phnum = 2};
    id_of(elf_file("lib32.so", &s32, notes, len), id, sizeof id);
    ck_assert_str_eq(id, "build-id deadbeef01020304");
}
END_TEST

START_TEST(test_shapes_not_trusted)
{
    static const unsigned char bid[] = {1, 2, 3, 4};
    unsigned char notes[512];
    size_t len = put_note(notes, "GNU", NT_GNU_BUILD_ID, bid, sizeof bid);
    const struct {
        const char *why;
        struct shape s;
    } cases[] = {
        {"the other byte order", {.cls = ELFCLASS64, .data = ELFDATA2MSB, .phnum = 1}},
        {"no class", {.cls = ELFCLASSNONE, .data = ELFDATA2LSB, .phnum = 1}},
        {"program headers of another size", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phentsize = 40, .phnum = 1}},
        {"too many program headers", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 257}},
        {"program headers past the end", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1, .cut = 80}},
        {"a header cut short", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1, .cut = 30}},
        {"a note segment larger than a page", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1, .note_size = 8192}},
        {"a note segment past the end", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1, .note_off = 100000}},
        {"a note segment cut short", {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1, .note_size = 200}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "shape%zu.so", i);
        expect_hash(elf_file(name, &cases[i].s, notes, len), cases[i].why);
    }
    /* not ELF at all, and a file shorter than an ELF identification */
    char path[256];
    snprintf(path, sizeof path, "%s/text.so", base);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a library, but named like one\n", f);
    fclose(f);
    expect_hash(path, "text");
    snprintf(path, sizeof path, "%s/tiny.so", base);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("\x7f" "EL", f);
    fclose(f);
    expect_hash(path, "tiny");
}
END_TEST

START_TEST(test_notes_not_trusted)
{
    struct shape s = {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1};
    unsigned char notes[512];
    uint32_t hdr[3];
    /* a note whose descriptor runs past its segment */
    hdr[0] = 4;
    hdr[1] = 400;
    hdr[2] = NT_GNU_BUILD_ID;
    memcpy(notes, hdr, sizeof hdr);
    memcpy(notes + 12, "GNU", 4);
    memset(notes + 16, 7, 20);
    expect_hash(elf_file("long-desc.so", &s, notes, 36), "descriptor past the segment");
    /* a build id with an owner other than GNU, and an empty one */
    size_t len = put_note(notes, "GNV", NT_GNU_BUILD_ID, (const unsigned char *)"\1\2\3\4", 4);
    expect_hash(elf_file("owner.so", &s, notes, len), "owner");
    len = put_note(notes, "GNU", NT_GNU_BUILD_ID, (const unsigned char *)"", 0);
    expect_hash(elf_file("empty.so", &s, notes, len), "empty build id");
    /* an owner name of another length */
    len = put_note(notes, "GNUX", NT_GNU_BUILD_ID, (const unsigned char *)"\1\2\3\4", 4);
    expect_hash(elf_file("owner5.so", &s, notes, len), "owner of 5 bytes");
    /* fewer than a note header's 12 bytes */
    expect_hash(elf_file("short.so", &s, notes, 8), "short segment");
    /* a build id of 64 bytes fits; of 65 it would not fit the caller's hex */
    unsigned char big[65];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)i;
    len = put_note(notes, "GNU", NT_GNU_BUILD_ID, big, 64);
    char id[200];
    id_of(elf_file("bid64.so", &s, notes, len), id, sizeof id);
    ck_assert_uint_eq(strlen(id), 9 + 128);
    ck_assert(strncmp(id, "build-id 000102", 15) == 0);
    len = put_note(notes, "GNU", NT_GNU_BUILD_ID, big, 65);
    expect_hash(elf_file("bid65.so", &s, notes, len), "a build id of 65 bytes");
}
END_TEST

START_TEST(test_unreadable_and_small_buffers)
{
    char id[64] = "x";
    char path[256];
    snprintf(path, sizeof path, "%s/missing.so", base);
    id_of(path, id, sizeof id);
    ck_assert_str_eq(id, "unreadable");
    id_of(NULL, id, sizeof id);
    ck_assert_str_eq(id, "unreadable");
    ckh_workloads_plugin_id(path, NULL, 10); /* nothing to write to: nothing written */
    strcpy(id, "kept");
    ckh_workloads_plugin_id(path, id, 0);
    ck_assert_str_eq(id, "kept");
    /* a buffer too small for the whole id gets its start */
    static const unsigned char bid[] = {0xab, 0xcd, 0xef, 0x12};
    unsigned char notes[64];
    size_t len = put_note(notes, "GNU", NT_GNU_BUILD_ID, bid, sizeof bid);
    struct shape s = {.cls = ELFCLASS64, .data = ELFDATA2LSB, .phnum = 1};
    char small[12];
    id_of(elf_file("small.so", &s, notes, len), small, sizeof small);
    ck_assert_str_eq(small, "build-id ab");
}
END_TEST

static Suite *plugin_id_suite(void)
{
    Suite *s = suite_create("plugin_id");
    TCase *tc = tcase_create("id");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_build_id_found);
    tcase_add_test(tc, test_shapes_not_trusted);
    tcase_add_test(tc, test_notes_not_trusted);
    tcase_add_test(tc, test_unreadable_and_small_buffers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(plugin_id_suite());
}
