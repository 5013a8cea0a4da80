
    // timeline instrumentation (driver.py, opencl_timeline_source): work-item (0, 0) records
    // its work-group's start, end (%globaltimer) and SM (%smid)
    if (get_local_id(0) == 0 && get_local_id(1) == 0) {
        ulong tt_t1;
        uint tt_sm;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt_t1));
        asm volatile("mov.u32 %0, %%smid;" : "=r"(tt_sm));
        const size_t tt_g = get_group_id(1) * get_num_groups(0) + get_group_id(0);
        tt_timeline[3 * tt_g] = tt_t0;
        tt_timeline[3 * tt_g + 1] = tt_t1;
        tt_timeline[3 * tt_g + 2] = tt_sm;
    }
}
