/* args.h: the options of the splash2 programs, pairs of "-x NUMBER".  A
 * program defines usage() (it exits) and lists its options, each a whole
 * number (num) or a real (real), ended by an empty entry:
 *   parse_args(argc, argv, (const splash_arg_t[]){ { "-n", &n }, { "-t", NULL, &theta }, { 0 } });
 * An unknown option, a missing value or one that is not wholly a number
 * calls usage(). */
#include <stdlib.h>
#include <string.h>

static void usage(void);

typedef struct {
    const char *flag;
    long *num;
    double *real;
} splash_arg_t;

static inline void parse_args(int argc, char **argv, const splash_arg_t *opts)
{
    for (int i = 1; i < argc; i += 2) {
        const splash_arg_t *o = opts;
        while (o->flag && strcmp(o->flag, argv[i]))
            o++;
        if (!o->flag || i + 1 >= argc)
            usage();
        const char *s = argv[i + 1];
        char *end;
        if (o->num)
            *o->num = strtol(s, &end, 10);
        else
            *o->real = strtod(s, &end);
        if (!*s || *end)
            usage();
    }
}
