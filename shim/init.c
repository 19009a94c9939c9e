/* placeholder until the shim core lands */
void memshim_placeholder(void);
void memshim_placeholder(void)
{
}
