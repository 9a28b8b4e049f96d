/*
 * The expat parsers of the verify readers (JUnit XML in junit.c, JaCoCo and Cobertura XML in
 * coverage.c) allocate through rein's allocator, so memory limits, fault injection and
 * accounting see them like any other allocation of rein.
 */
#include "output_int.h"

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

XML_Parser rein__verify_xml_new(void *ud, XML_StartElementHandler start, XML_EndElementHandler end,
                                XML_CharacterDataHandler text, XML_EntityDeclHandler entity)
{
    XML_Parser p = XML_ParserCreate_MM(NULL, &xml_mem, NULL);

    if (!p)
        return NULL;
    rein__verify_xml_setup(p, ud, start, end, text, entity);
    return p;
}

void rein__verify_xml_setup(XML_Parser p, void *ud, XML_StartElementHandler start,
                            XML_EndElementHandler end, XML_CharacterDataHandler text,
                            XML_EntityDeclHandler entity)
{
    XML_SetUserData(p, ud);
    XML_SetElementHandler(p, start, end);
    if (text)
        XML_SetCharacterDataHandler(p, text);
    XML_SetEntityDeclHandler(p, entity);
}
