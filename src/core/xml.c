/*
 * The expat parsers of every XML reader (verify's JUnit, JaCoCo and Cobertura reports, the
 * providers' STS answers): they allocate through rein's allocator, so memory limits, fault
 * injection and accounting see them like any other allocation of rein, and they refuse entity
 * declarations.
 */
#include "core/internal.h"

static void *xml_malloc(size_t n)
{
    return rein_malloc(n);
}

static void *xml_realloc(void *p, size_t n)
{
    return rein_realloc(p, n);
}

static void xml_free(void *p)
{
    rein_free(p);
}

static const XML_Memory_Handling_Suite xml_mem = {xml_malloc, xml_realloc, xml_free};

static void refuse_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                          int value_len, const XML_Char *base, const XML_Char *system_id,
                          const XML_Char *public_id, const XML_Char *notation)
{
    struct rein__xml_guard *g = ud;

    (void)name;
    (void)is_param;
    (void)value;
    (void)value_len;
    (void)base;
    (void)system_id;
    (void)public_id;
    (void)notation;
    g->entity = true;
    XML_StopParser(g->parser, XML_FALSE);
}

bool rein__xml_start(struct rein__xml_guard *g, XML_StartElementHandler start,
                     XML_EndElementHandler end, XML_CharacterDataHandler text)
{
    if (g->parser) {
        if (!XML_ParserReset(g->parser, NULL))
            return false;
    } else {
        g->parser = XML_ParserCreate_MM(NULL, &xml_mem, NULL);
        if (!g->parser)
            return false;
    }
    g->entity = false;
    XML_SetUserData(g->parser, g);
    XML_SetElementHandler(g->parser, start, end);
    if (text)
        XML_SetCharacterDataHandler(g->parser, text);
    XML_SetEntityDeclHandler(g->parser, refuse_entity);
    return true;
}
