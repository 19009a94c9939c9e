/* placeholder until the analyzer lands */
const char *analyze_version(void);
const char *analyze_version(void)
{
    return "0.1.0";
}
