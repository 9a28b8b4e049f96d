/*
 * The metaschemas rein knows without a registry: draft-07 and 2020-12 with its vocabulary
 * metaschemas, as published by json-schema.org, in compact form. A $ref or $schema naming one
 * of these URIs resolves here, so schemas can refer to the metaschema (e.g. to validate a
 * schema) without any network access.
 *
 * Generated from the published documents; edit them as JSON, not by hand here.
 */
#include "schema/schema_int.h"

#include <string.h>

struct metaschema {
    const char *uri;
    const char *text;
};

static const struct metaschema metaschemas[] = {
    {"http://json-schema.org/draft-07/schema",
     "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"$id\":\"http://json-schema.or"
     "g/draft-07/schema#\",\"title\":\"Core schema meta-schema\",\"definitions\":{\"schemaArra"
     "y\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"$ref\":\"#\"}},\"nonNegativeInteger"
     "\":{\"type\":\"integer\",\"minimum\":0},\"nonNegativeIntegerDefault0\":{\"allOf\":[{\"$r"
     "ef\":\"#/definitions/nonNegativeInteger\"},{\"default\":0}]},\"simpleTypes\":{\"enum\":["
     "\"array\",\"boolean\",\"integer\",\"null\",\"number\",\"object\",\"string\"]},\"stringAr"
     "ray\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":true,\"default"
     "\":[]}},\"type\":[\"object\",\"boolean\"],\"properties\":{\"$id\":{\"type\":\"string\","
     "\"format\":\"uri-reference\"},\"$schema\":{\"type\":\"string\",\"format\":\"uri\"},\"$re"
     "f\":{\"type\":\"string\",\"format\":\"uri-reference\"},\"$comment\":{\"type\":\"string\""
     "},\"title\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},\"default\":true"
     ",\"readOnly\":{\"type\":\"boolean\",\"default\":false},\"examples\":{\"type\":\"array\","
     "\"items\":true},\"multipleOf\":{\"type\":\"number\",\"exclusiveMinimum\":0},\"maximum\":"
     "{\"type\":\"number\"},\"exclusiveMaximum\":{\"type\":\"number\"},\"minimum\":{\"type\":"
     "\"number\"},\"exclusiveMinimum\":{\"type\":\"number\"},\"maxLength\":{\"$ref\":\"#/defin"
     "itions/nonNegativeInteger\"},\"minLength\":{\"$ref\":\"#/definitions/nonNegativeIntegerD"
     "efault0\"},\"pattern\":{\"type\":\"string\",\"format\":\"regex\"},\"additionalItems\":{"
     "\"$ref\":\"#\"},\"items\":{\"anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#/definitions/schemaA"
     "rray\"}],\"default\":true},\"maxItems\":{\"$ref\":\"#/definitions/nonNegativeInteger\"},"
     "\"minItems\":{\"$ref\":\"#/definitions/nonNegativeIntegerDefault0\"},\"uniqueItems\":{\""
     "type\":\"boolean\",\"default\":false},\"contains\":{\"$ref\":\"#\"},\"maxProperties\":{"
     "\"$ref\":\"#/definitions/nonNegativeInteger\"},\"minProperties\":{\"$ref\":\"#/definitio"
     "ns/nonNegativeIntegerDefault0\"},\"required\":{\"$ref\":\"#/definitions/stringArray\"},"
     "\"additionalProperties\":{\"$ref\":\"#\"},\"definitions\":{\"type\":\"object\",\"additio"
     "nalProperties\":{\"$ref\":\"#\"},\"default\":{}},\"properties\":{\"type\":\"object\",\"a"
     "dditionalProperties\":{\"$ref\":\"#\"},\"default\":{}},\"patternProperties\":{\"type\":"
     "\"object\",\"additionalProperties\":{\"$ref\":\"#\"},\"propertyNames\":{\"format\":\"reg"
     "ex\"},\"default\":{}},\"dependencies\":{\"type\":\"object\",\"additionalProperties\":{\""
     "anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#/definitions/stringArray\"}]}},\"propertyNames\":"
     "{\"$ref\":\"#\"},\"const\":true,\"enum\":{\"type\":\"array\",\"items\":true},\"type\":{"
     "\"anyOf\":[{\"$ref\":\"#/definitions/simpleTypes\"},{\"type\":\"array\",\"items\":{\"$re"
     "f\":\"#/definitions/simpleTypes\"},\"minItems\":1,\"uniqueItems\":true}]},\"format\":{\""
     "type\":\"string\"},\"contentMediaType\":{\"type\":\"string\"},\"contentEncoding\":{\"typ"
     "e\":\"string\"},\"if\":{\"$ref\":\"#\"},\"then\":{\"$ref\":\"#\"},\"else\":{\"$ref\":\"#"
     "\"},\"allOf\":{\"$ref\":\"#/definitions/schemaArray\"},\"anyOf\":{\"$ref\":\"#/definitio"
     "ns/schemaArray\"},\"oneOf\":{\"$ref\":\"#/definitions/schemaArray\"},\"not\":{\"$ref\":"
     "\"#\"}},\"default\":true}"},
    {"https://json-schema.org/draft/2020-12/schema",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/schema\",\"$vocabulary\":{\"https://json-schema.org/draft/2020-12/"
     "vocab/core\":true,\"https://json-schema.org/draft/2020-12/vocab/applicator\":true,\"http"
     "s://json-schema.org/draft/2020-12/vocab/unevaluated\":true,\"https://json-schema.org/dra"
     "ft/2020-12/vocab/validation\":true,\"https://json-schema.org/draft/2020-12/vocab/meta-da"
     "ta\":true,\"https://json-schema.org/draft/2020-12/vocab/format-annotation\":true,\"https"
     "://json-schema.org/draft/2020-12/vocab/content\":true},\"$dynamicAnchor\":\"meta\",\"tit"
     "le\":\"Core and Validation specifications meta-schema\",\"allOf\":[{\"$ref\":\"meta/core"
     "\"},{\"$ref\":\"meta/applicator\"},{\"$ref\":\"meta/unevaluated\"},{\"$ref\":\"meta/vali"
     "dation\"},{\"$ref\":\"meta/meta-data\"},{\"$ref\":\"meta/format-annotation\"},{\"$ref\":"
     "\"meta/content\"}],\"type\":[\"object\",\"boolean\"],\"$comment\":\"This meta-schema als"
     "o defines keywords that have appeared in previous drafts in order to prevent incompatibl"
     "e extensions as they remain in common use.\",\"properties\":{\"definitions\":{\"$comment"
     "\":\"\\\"definitions\\\" has been replaced by \\\"$defs\\\".\",\"type\":\"object\",\"add"
     "itionalProperties\":{\"$dynamicRef\":\"#meta\"},\"deprecated\":true,\"default\":{}},\"de"
     "pendencies\":{\"$comment\":\"\\\"dependencies\\\" has been split and replaced by \\\"dep"
     "endentSchemas\\\" and \\\"dependentRequired\\\" in order to serve their differing semant"
     "ics.\",\"type\":\"object\",\"additionalProperties\":{\"anyOf\":[{\"$dynamicRef\":\"#meta"
     "\"},{\"$ref\":\"meta/validation#/$defs/stringArray\"}]},\"deprecated\":true,\"default\":"
     "{}},\"$recursiveAnchor\":{\"$comment\":\"\\\"$recursiveAnchor\\\" has been replaced by "
     "\\\"$dynamicAnchor\\\".\",\"$ref\":\"meta/core#/$defs/anchorString\",\"deprecated\":true"
     "},\"$recursiveRef\":{\"$comment\":\"\\\"$recursiveRef\\\" has been replaced by \\\"$dyna"
     "micRef\\\".\",\"$ref\":\"meta/core#/$defs/uriReferenceString\",\"deprecated\":true}}}"},
    {"https://json-schema.org/draft/2020-12/meta/core",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/core\",\"$vocabulary\":{\"https://json-schema.org/draft/2020-"
     "12/vocab/core\":true},\"$dynamicAnchor\":\"meta\",\"title\":\"Core vocabulary meta-schem"
     "a\",\"type\":[\"object\",\"boolean\"],\"properties\":{\"$id\":{\"$ref\":\"#/$defs/uriRef"
     "erenceString\",\"$comment\":\"Non-empty fragments not allowed.\",\"pattern\":\"^[^#]*#?$"
     "\"},\"$schema\":{\"$ref\":\"#/$defs/uriString\"},\"$ref\":{\"$ref\":\"#/$defs/uriReferen"
     "ceString\"},\"$anchor\":{\"$ref\":\"#/$defs/anchorString\"},\"$dynamicRef\":{\"$ref\":\""
     "#/$defs/uriReferenceString\"},\"$dynamicAnchor\":{\"$ref\":\"#/$defs/anchorString\"},\"$"
     "vocabulary\":{\"type\":\"object\",\"propertyNames\":{\"$ref\":\"#/$defs/uriString\"},\"a"
     "dditionalProperties\":{\"type\":\"boolean\"}},\"$comment\":{\"type\":\"string\"},\"$defs"
     "\":{\"type\":\"object\",\"additionalProperties\":{\"$dynamicRef\":\"#meta\"}}},\"$defs\""
     ":{\"anchorString\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z_][-A-Za-z0-9._]*$\"},\"ur"
     "iString\":{\"type\":\"string\",\"format\":\"uri\"},\"uriReferenceString\":{\"type\":\"st"
     "ring\",\"format\":\"uri-reference\"}}}"},
    {"https://json-schema.org/draft/2020-12/meta/applicator",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/applicator\",\"$vocabulary\":{\"https://json-schema.org/draft"
     "/2020-12/vocab/applicator\":true},\"$dynamicAnchor\":\"meta\",\"title\":\"Applicator voc"
     "abulary meta-schema\",\"type\":[\"object\",\"boolean\"],\"properties\":{\"prefixItems\":"
     "{\"$ref\":\"#/$defs/schemaArray\"},\"items\":{\"$dynamicRef\":\"#meta\"},\"contains\":{"
     "\"$dynamicRef\":\"#meta\"},\"additionalProperties\":{\"$dynamicRef\":\"#meta\"},\"proper"
     "ties\":{\"type\":\"object\",\"additionalProperties\":{\"$dynamicRef\":\"#meta\"},\"defau"
     "lt\":{}},\"patternProperties\":{\"type\":\"object\",\"additionalProperties\":{\"$dynamic"
     "Ref\":\"#meta\"},\"propertyNames\":{\"format\":\"regex\"},\"default\":{}},\"dependentSch"
     "emas\":{\"type\":\"object\",\"additionalProperties\":{\"$dynamicRef\":\"#meta\"},\"defau"
     "lt\":{}},\"propertyNames\":{\"$dynamicRef\":\"#meta\"},\"if\":{\"$dynamicRef\":\"#meta\""
     "},\"then\":{\"$dynamicRef\":\"#meta\"},\"else\":{\"$dynamicRef\":\"#meta\"},\"allOf\":{"
     "\"$ref\":\"#/$defs/schemaArray\"},\"anyOf\":{\"$ref\":\"#/$defs/schemaArray\"},\"oneOf\""
     ":{\"$ref\":\"#/$defs/schemaArray\"},\"not\":{\"$dynamicRef\":\"#meta\"}},\"$defs\":{\"sc"
     "hemaArray\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"$dynamicRef\":\"#meta\"}}}}"},
    {"https://json-schema.org/draft/2020-12/meta/unevaluated",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/unevaluated\",\"$vocabulary\":{\"https://json-schema.org/draf"
     "t/2020-12/vocab/unevaluated\":true},\"$dynamicAnchor\":\"meta\",\"title\":\"Unevaluated "
     "applicator vocabulary meta-schema\",\"type\":[\"object\",\"boolean\"],\"properties\":{\""
     "unevaluatedItems\":{\"$dynamicRef\":\"#meta\"},\"unevaluatedProperties\":{\"$dynamicRef"
     "\":\"#meta\"}}}"},
    {"https://json-schema.org/draft/2020-12/meta/validation",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/validation\",\"$vocabulary\":{\"https://json-schema.org/draft"
     "/2020-12/vocab/validation\":true},\"$dynamicAnchor\":\"meta\",\"title\":\"Validation voc"
     "abulary meta-schema\",\"type\":[\"object\",\"boolean\"],\"properties\":{\"type\":{\"anyO"
     "f\":[{\"$ref\":\"#/$defs/simpleTypes\"},{\"type\":\"array\",\"items\":{\"$ref\":\"#/$def"
     "s/simpleTypes\"},\"minItems\":1,\"uniqueItems\":true}]},\"const\":true,\"enum\":{\"type"
     "\":\"array\",\"items\":true},\"multipleOf\":{\"type\":\"number\",\"exclusiveMinimum\":0}"
     ",\"maximum\":{\"type\":\"number\"},\"exclusiveMaximum\":{\"type\":\"number\"},\"minimum"
     "\":{\"type\":\"number\"},\"exclusiveMinimum\":{\"type\":\"number\"},\"maxLength\":{\"$re"
     "f\":\"#/$defs/nonNegativeInteger\"},\"minLength\":{\"$ref\":\"#/$defs/nonNegativeInteger"
     "Default0\"},\"pattern\":{\"type\":\"string\",\"format\":\"regex\"},\"maxItems\":{\"$ref"
     "\":\"#/$defs/nonNegativeInteger\"},\"minItems\":{\"$ref\":\"#/$defs/nonNegativeIntegerDe"
     "fault0\"},\"uniqueItems\":{\"type\":\"boolean\",\"default\":false},\"maxContains\":{\"$r"
     "ef\":\"#/$defs/nonNegativeInteger\"},\"minContains\":{\"$ref\":\"#/$defs/nonNegativeInte"
     "ger\",\"default\":1},\"maxProperties\":{\"$ref\":\"#/$defs/nonNegativeInteger\"},\"minPr"
     "operties\":{\"$ref\":\"#/$defs/nonNegativeIntegerDefault0\"},\"required\":{\"$ref\":\"#/"
     "$defs/stringArray\"},\"dependentRequired\":{\"type\":\"object\",\"additionalProperties\""
     ":{\"$ref\":\"#/$defs/stringArray\"}}},\"$defs\":{\"nonNegativeInteger\":{\"type\":\"inte"
     "ger\",\"minimum\":0},\"nonNegativeIntegerDefault0\":{\"$ref\":\"#/$defs/nonNegativeInteg"
     "er\",\"default\":0},\"simpleTypes\":{\"enum\":[\"array\",\"boolean\",\"integer\",\"null"
     "\",\"number\",\"object\",\"string\"]},\"stringArray\":{\"type\":\"array\",\"items\":{\"t"
     "ype\":\"string\"},\"uniqueItems\":true,\"default\":[]}}}"},
    {"https://json-schema.org/draft/2020-12/meta/meta-data",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/meta-data\",\"$vocabulary\":{\"https://json-schema.org/draft/"
     "2020-12/vocab/meta-data\":true},\"$dynamicAnchor\":\"meta\",\"title\":\"Meta-data vocabu"
     "lary meta-schema\",\"type\":[\"object\",\"boolean\"],\"properties\":{\"title\":{\"type\""
     ":\"string\"},\"description\":{\"type\":\"string\"},\"default\":true,\"deprecated\":{\"ty"
     "pe\":\"boolean\",\"default\":false},\"readOnly\":{\"type\":\"boolean\",\"default\":false"
     "},\"writeOnly\":{\"type\":\"boolean\",\"default\":false},\"examples\":{\"type\":\"array"
     "\",\"items\":true}}}"},
    {"https://json-schema.org/draft/2020-12/meta/format-annotation",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/format-annotation\",\"$vocabulary\":{\"https://json-schema.or"
     "g/draft/2020-12/vocab/format-annotation\":true},\"$dynamicAnchor\":\"meta\",\"title\":\""
     "Format vocabulary meta-schema for annotation results\",\"type\":[\"object\",\"boolean\"]"
     ",\"properties\":{\"format\":{\"type\":\"string\"}}}"},
    {"https://json-schema.org/draft/2020-12/meta/content",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/content\",\"$vocabulary\":{\"https://json-schema.org/draft/20"
     "20-12/vocab/content\":true},\"$dynamicAnchor\":\"meta\",\"title\":\"Content vocabulary m"
     "eta-schema\",\"type\":[\"object\",\"boolean\"],\"properties\":{\"contentEncoding\":{\"ty"
     "pe\":\"string\"},\"contentMediaType\":{\"type\":\"string\"},\"contentSchema\":{\"$dynami"
     "cRef\":\"#meta\"}}}"},
    {"https://json-schema.org/draft/2020-12/meta/format-assertion",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"https://json-sch"
     "ema.org/draft/2020-12/meta/format-assertion\",\"$dynamicAnchor\":\"meta\",\"title\":\"Fo"
     "rmat vocabulary meta-schema for assertion results\",\"type\":[\"object\",\"boolean\"],\""
     "properties\":{\"format\":{\"type\":\"string\"}}}"},
};

const char *rein__metaschema_text(const char *uri)
{
    size_t n = rein__uri_base_len(uri);

    for (size_t i = 0; i < REIN_ARRAY_SIZE(metaschemas); i++) {
        if (strlen(metaschemas[i].uri) == n && strncmp(metaschemas[i].uri, uri, n) == 0)
            return metaschemas[i].text;
    }
    return NULL;
}
