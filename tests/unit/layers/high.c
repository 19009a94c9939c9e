/* check_layers' own test: a module of the upper layer, which may call down. */
int layers_low(void);

int layers_high(void)
{
    return 1;
}

int layers_high_calls_down(void)
{
    return layers_low();
}
