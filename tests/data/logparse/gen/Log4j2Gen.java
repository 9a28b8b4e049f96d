// Writes samples of Log4j 2 pattern layouts with the real Log4j 2 (Debian's liblog4j2-java):
// the pattern of Log4j's default configuration, and the "%d %p %c{1.} [%t] %m%n" pattern of
// its manual.
//
// usage: javac -cp $CP Log4j2Gen.java && java -cp $CP:. Log4j2Gen OUTDIR
//        CP=/usr/share/java/log4j-api.jar:/usr/share/java/log4j-core.jar
import java.io.File;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilder;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilderFactory;
import org.apache.logging.log4j.core.config.builder.impl.BuiltConfiguration;

public class Log4j2Gen {
    static void emit(String dir, String pattern) {
        new File(dir).mkdirs();
        ConfigurationBuilder<BuiltConfiguration> b =
            ConfigurationBuilderFactory.newConfigurationBuilder();
        b.add(b.newAppender("file", "File")
                  .addAttribute("fileName", dir + "/input")
                  .addAttribute("append", false)
                  .add(b.newLayout("PatternLayout").addAttribute("pattern", pattern)));
        b.add(b.newRootLogger(Level.TRACE).add(b.newAppenderRef("file")));
        LoggerContext ctx = Configurator.initialize(b.build());
        Logger svc = ctx.getLogger("com.example.orders.OrderService");
        Logger web = ctx.getLogger("com.example.web.Api");
        svc.debug("cart has {} items", 3);
        web.info("Started Api in 2.31 seconds");
        svc.warn("inventory low for sku {}", "A-100");
        svc.error("payment gateway returned {}", 503);
        svc.fatal("cannot recover, exiting");
        Configurator.shutdown(ctx);
    }

    public static void main(String[] args) {
        String out = args[0];
        emit(out + "/java_log4j2_default", "%d{HH:mm:ss.SSS} [%t] %-5level %logger{36} - %msg%n");
        emit(out + "/java_log4j2_manual", "%d %p %c{1.} [%t] %m%n");
    }
}
