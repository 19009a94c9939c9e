/* check_layers' own test: a module of the lower layer that calls upward (what the check must
 * refuse). */
int layers_high(void);

int layers_low(void)
{
    return layers_high() + 1;
}
